#pragma once
// The fused forward kernel for fp32 inputs, on the ordinary FP32 units (no TF32: results stay
// within fp32 tolerance of the float64 reference). A block holds 16 queries; each warp takes 4
// of them and, per 32-key tile, lane j scores key j, the warp reduces the online-softmax
// statistics with shuffles, and each lane accumulates its own columns of O. Same tile
// skipping and masking rules as the tensor-core kernel.

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/flash_params.h"
#include "kernels/cuda/flash_tiling.h"

namespace attnscope::cuda::simt {

__device__ __forceinline__ float warpMax(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warpSum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

template <int kD>
__global__ void __launch_bounds__(128) flashFwdSimt(const FlashParams p) {
  constexpr FlashTile kTile = simtTile();  // flash_tiling.h: the shape selectFlashKernel reports
  constexpr int kBM = kTile.block_m, kBN = kTile.block_n, kWarps = kTile.warps, kRows = kBM / kWarps, kDC = kD / 32;
  static_assert(kWarps * 32 == 128 && kBN == 32, "the loops below stride by 128 threads, one key per lane");
  extern __shared__ float smem[];
  float* sQ = smem;                  // [kBM][kD]
  float* sK = sQ + kBM * kD;         // [kBN][kD + 1]: lane j reads row j, column d: no conflicts
  float* sV = sK + kBN * (kD + 1);   // [kBN][kD]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t m0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBM;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int64_t m1 = m0 + kBM < p.seq_q ? m0 + kBM : p.seq_q;
  const int D = p.head_dim;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);

  const float* q = static_cast<const float*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const float* k = static_cast<const float*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const float* v = static_cast<const float*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  float* o = static_cast<float*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  const uint8_t* mask = p.mask ? p.mask + b * p.mask_batch_stride + h * p.mask_head_stride : nullptr;
  float* lse = p.lse ? p.lse + (static_cast<int64_t>(b) * p.heads + h) * p.seq_q : nullptr;

  for (int c = threadIdx.x; c < kBM * kD; c += 128) {
    const int r = c / kD, d = c % kD;
    sQ[c] = m0 + r < p.seq_q && d < D ? q[(m0 + r) * p.q_row_stride + d] : 0.f;
  }

  float acc[kRows][kDC];
  float row_m[kRows], row_l[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kDC; ++c) acc[r][c] = 0.f;
    row_m[r] = -INFINITY;
    row_l[r] = 0.f;
  }

  const KeyTileSpan span = keyTileSpan(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, kBN);
  for (int64_t t = span.first; t < span.last; ++t) {
    const int64_t n0 = t * kBN;
    __syncthreads();  // previous tile consumed (and, the first time, sQ written)
    for (int c = threadIdx.x; c < kBN * kD; c += 128) {
      const int r = c / kD, d = c % kD;
      const bool in = n0 + r < p.seq_kv && d < D;
      sK[r * (kD + 1) + d] = in ? k[(n0 + r) * p.k_row_stride + d] : 0.f;
      sV[r * kD + d] = in ? v[(n0 + r) * p.v_row_stride + d] : 0.f;
    }
    __syncthreads();
    const bool need_mask = tileNeedsMask(mk, p.mask_width, m0, m1, n0, kBN, p.seq_q, p.seq_kv);
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int qi = warp * kRows + r;
      const int64_t i = m0 + qi, j = n0 + lane;
      float x = 0.f;
      for (int d = 0; d < D; ++d) x += sQ[qi * kD + d] * sK[lane * (kD + 1) + d];
      x *= p.scale_log2;
      if (need_mask) {
        bool ok = i < p.seq_q && j < p.seq_kv && keyVisible(mk, p.mask_width, i, j, p.seq_q, p.seq_kv);
        if (ok && mask) ok = mask[i * p.mask_row_stride + j] != 0;
        if (!ok) x = -INFINITY;
      }
      const float mx = fmaxf(row_m[r], warpMax(x));
      const float m_use = mx == -INFINITY ? 0.f : mx;
      const float alpha = exp2f(row_m[r] - m_use);
      const float pj = exp2f(x - m_use);
      row_m[r] = mx;
      row_l[r] = row_l[r] * alpha + warpSum(pj);
#pragma unroll
      for (int c = 0; c < kDC; ++c) acc[r][c] *= alpha;
      for (int jj = 0; jj < kBN; ++jj) {
        const float pb = __shfl_sync(0xffffffffu, pj, jj);
#pragma unroll
        for (int c = 0; c < kDC; ++c) acc[r][c] += pb * sV[jj * kD + c * 32 + lane];
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int64_t i = m0 + warp * kRows + r;
    if (i >= p.seq_q) continue;
    const float l = row_l[r];
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int c = 0; c < kDC; ++c) {
      const int d = c * 32 + lane;
      if (d < D) o[i * p.o_row_stride + d] = acc[r][c] * inv;
    }
    if (lse && lane == 0) lse[i] = l > 0.f ? (row_m[r] + log2f(l)) * 0.69314718055994531f : -INFINITY;
  }
}

template <int kD>
void launchSimt(const FlashParams& p, cudaStream_t stream) {
  constexpr FlashTile kTile = simtTile();
  constexpr int kSmem = static_cast<int>(simtSmemBytes(kD));
  auto kernel = &flashFwdSimt<kD>;
  if (kSmem > 48 * 1024)
    ATTNSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid(static_cast<unsigned>((p.seq_q + kTile.block_m - 1) / kTile.block_m), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, kTile.warps * 32, kSmem, stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH("flash_fwd_simt");
}

}  // namespace attnscope::cuda::simt
