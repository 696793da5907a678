#pragma once
// The fused forward kernel on tensor cores (fp16 and bf16 inputs, fp32 accumulation), in the
// style of FlashAttention-2: each warp owns 16 x kMT query rows of a block; S = Q K^T and
// O += P V run on mma.sync m16n8k16; the S accumulator is rescaled in registers (online
// softmax) and re-packed as the A operand of the P V product without touching shared memory.
// K and V tiles are double-buffered with cp.async. Tiles wholly outside the mask are never
// loaded; tiles wholly inside skip the per-element mask.
//
// Fragment layouts (PTX ISA, "mma.m16n8k16"): with g = lane / 4 and c = lane % 4, the A
// registers hold rows {g, g + 8} x columns {2c, 2c + 1, 2c + 8, 2c + 9}; B holds rows
// {2c, 2c + 1, 2c + 8, 2c + 9} x column g; C holds rows {g, g + 8} x columns {2c, 2c + 1}.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/flash_params.h"
#include "kernels/cuda/flash_tiling.h"

namespace attnscope::cuda::mma {

template <typename T>
struct Elem;

template <>
struct Elem<__half> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void store2(__half* p, float lo, float hi) {
    *reinterpret_cast<__half2*>(p) = __floats2half2_rn(lo, hi);
  }
  static __device__ __forceinline__ void zero2(__half* p) { *reinterpret_cast<uint32_t*>(p) = 0u; }
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

template <>
struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
  static __device__ __forceinline__ void store2(__nv_bfloat16* p, float lo, float hi) {
    *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(lo, hi);
  }
  static __device__ __forceinline__ void zero2(__nv_bfloat16* p) { *reinterpret_cast<uint32_t*>(p) = 0u; }
  static __device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void ldmatrixX4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smemAddr(p)));
}

__device__ __forceinline__ void ldmatrixX4Trans(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smemAddr(p)));
}

// 16 bytes global -> shared; src_bytes == 0 writes zeros (rows past the end, padded columns).
__device__ __forceinline__ void cpAsync16(void* smem, const void* gmem, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smemAddr(smem)), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Rows [r0, r0 + kRows) of a [rows, D] matrix into shared memory with row stride kStride;
// rows >= limit and columns >= head_dim are zero-filled (head_dim is a multiple of 8).
template <typename T, int kRows, int kD, int kStride, int kThreads>
__device__ __forceinline__ void loadTile(T* dst, const T* src, int64_t row_stride, int64_t r0, int64_t limit,
                                         int head_dim) {
  constexpr int kChunks = kD / 8;
#pragma unroll
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks, ch = c % kChunks;
    const bool valid = r0 + r < limit && ch * 8 < head_dim;
    const T* g = valid ? src + (r0 + r) * row_stride + ch * 8 : src;
    cpAsync16(dst + r * kStride + ch * 8, g, valid);
  }
}

template <typename T, int kD, int kBM, int kBN, int kWarps>
__global__ void __launch_bounds__(kWarps * 32) flashFwdMma(const FlashParams p) {
  constexpr int kThreads = kWarps * 32;
  constexpr int kStride = kD + kMmaRowPad;  // +16 bytes a row: ldmatrix rows land in distinct banks
  constexpr int kRowsPerWarp = kBM / kWarps;
  constexpr int kMT = kRowsPerWarp / 16;  // m16 tiles per warp
  constexpr int kNT = kBN / 8;            // n8 tiles of S
  constexpr int kDT = kD / 8;             // n8 tiles of O
  static_assert(kRowsPerWarp % 16 == 0 && kBN % 16 == 0 && kD % 16 == 0, "tile shape");

  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kBM * kStride;      // [2][kBN][kStride]
  T* sV = sK + 2 * kBN * kStride;  // [2][kBN][kStride]

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  // Heaviest query blocks (last under causal masks) first, for a better tail.
  const int64_t m0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBM;
  const int h = blockIdx.y, b = blockIdx.z;
  const int hk = h / (p.heads / p.kv_heads);
  const int64_t m1 = m0 + kBM < p.seq_q ? m0 + kBM : p.seq_q;
  const int D = p.head_dim;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);

  const T* q = static_cast<const T*>(p.q) + b * p.q_batch_stride + h * p.q_head_stride;
  const T* k = static_cast<const T*>(p.k) + b * p.k_batch_stride + hk * p.k_head_stride;
  const T* v = static_cast<const T*>(p.v) + b * p.v_batch_stride + hk * p.v_head_stride;
  T* o = static_cast<T*>(p.o) + b * p.o_batch_stride + h * p.o_head_stride;
  const uint8_t* mask = p.mask ? p.mask + b * p.mask_batch_stride + h * p.mask_head_stride : nullptr;
  float* lse = p.lse ? p.lse + (static_cast<int64_t>(b) * p.heads + h) * p.seq_q : nullptr;

  const KeyTileSpan span = keyTileSpan(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, kBN);
  if (span.first >= span.last) {  // no query of the block sees a key: zeros, lse -inf
    for (int c = threadIdx.x; c < (m1 - m0) * (D / 2); c += kThreads) {
      const int64_t i = m0 + c / (D / 2);
      Elem<T>::zero2(o + i * p.o_row_stride + (c % (D / 2)) * 2);
    }
    for (int64_t i = m0 + threadIdx.x; i < m1; i += kThreads)
      if (lse) lse[i] = -INFINITY;
    return;
  }

  loadTile<T, kBM, kD, kStride, kThreads>(sQ, q, p.q_row_stride, m0, p.seq_q, D);
  loadTile<T, kBN, kD, kStride, kThreads>(sK, k, p.k_row_stride, span.first * kBN, p.seq_kv, D);
  loadTile<T, kBN, kD, kStride, kThreads>(sV, v, p.v_row_stride, span.first * kBN, p.seq_kv, D);
  cpAsyncCommit();

  float oacc[kMT][kDT][4];
  float row_m[kMT][2], row_l[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
      for (int e = 0; e < 4; ++e) oacc[mt][dt][e] = 0.f;
    row_m[mt][0] = row_m[mt][1] = -INFINITY;
    row_l[mt][0] = row_l[mt][1] = 0.f;
  }
  const int ksteps = (D + 15) / 16;  // 16-wide steps that hold real columns of the padded head dim
  const int warp_row0 = warp * kRowsPerWarp;

  for (int64_t t = span.first; t < span.last; ++t) {
    const int buf = static_cast<int>((t - span.first) & 1);
    if (t + 1 < span.last) {
      loadTile<T, kBN, kD, kStride, kThreads>(sK + (buf ^ 1) * kBN * kStride, k, p.k_row_stride, (t + 1) * kBN,
                                              p.seq_kv, D);
      loadTile<T, kBN, kD, kStride, kThreads>(sV + (buf ^ 1) * kBN * kStride, v, p.v_row_stride, (t + 1) * kBN,
                                              p.seq_kv, D);
    }
    cpAsyncCommit();  // possibly empty: keeps "all but the newest group" meaning tile t
    cpAsyncWait<1>();
    __syncthreads();
    const T* cK = sK + buf * kBN * kStride;
    const T* cV = sV + buf * kBN * kStride;

    // S = Q K^T for this warp's rows.
    float s[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
#pragma unroll
    for (int ks = 0; ks < kD / 16; ++ks) {
      if (ks < ksteps) {
        uint32_t qa[kMT][4];
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt)
          ldmatrixX4(qa[mt], sQ + (warp_row0 + mt * 16 + (lane % 16)) * kStride + ks * 16 + (lane / 16) * 8);
#pragma unroll
        for (int np = 0; np < kNT / 2; ++np) {
          uint32_t kb[4];
          ldmatrixX4(kb, cK + (np * 16 + (lane / 16) * 8 + (lane % 8)) * kStride + ks * 16 + ((lane / 8) % 2) * 8);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            Elem<T>::mma(s[mt][2 * np], qa[mt], kb[0], kb[1]);
            Elem<T>::mma(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
          }
        }
      }
    }

    // Scale into the exp2 domain, then mask. A masked tile gets each row's visible columns
    // [lo, hi) once (tile-relative, 32-bit) and the dense mask row read tile by tile.
    const int64_t n0 = t * kBN;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] *= p.scale_log2;
    if (tileNeedsMask(mk, p.mask_width, m0, m1, n0, kBN, p.seq_q, p.seq_kv)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r2 = 0; r2 < 2; ++r2) {
          const int64_t i = m0 + warp_row0 + mt * 16 + lane / 4 + r2 * 8;
          int lo = 0, hi = 0;
          if (i < p.seq_q) {
            lo = static_cast<int>(clampI64(keyBegin(mk, p.mask_width, i, p.seq_q, p.seq_kv) - n0, 0, kBN));
            hi = static_cast<int>(clampI64(keyEnd(mk, p.mask_width, i, p.seq_q, p.seq_kv) - n0, 0, kBN));
          }
          const uint8_t* mrow = mask && i < p.seq_q ? mask + i * p.mask_row_stride + n0 : nullptr;
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 2 * r2; e < 2 * r2 + 2; ++e) {
              const int col = nt * 8 + 2 * (lane % 4) + (e % 2);
              bool ok = col >= lo && col < hi;
              if (ok && mrow) ok = mrow[col] != 0;
              if (!ok) s[mt][nt][e] = -INFINITY;
            }
        }
    }

    // Online softmax: rows g and g + 8 of each m-tile; a row's 4 owners are one lane quad.
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int r2 = 0; r2 < 2; ++r2) {
        float mx = row_m[mt][r2];
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r2], s[mt][nt][2 * r2 + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_use = mx == -INFINITY ? 0.f : mx;  // a row with nothing visible yet stays 0
        const float alpha = exp2f(row_m[mt][r2] - m_use);
        row_m[mt][r2] = mx;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 2 * r2; e < 2 * r2 + 2; ++e) {
            const float pe = exp2f(s[mt][nt][e] - m_use);
            s[mt][nt][e] = pe;
            sum += pe;
          }
        row_l[mt][r2] = row_l[mt][r2] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          oacc[mt][dt][2 * r2] *= alpha;
          oacc[mt][dt][2 * r2 + 1] *= alpha;
        }
      }

    // O += P V: the C fragments of two adjacent n8 tiles of P are the A fragment of one k16 step.
    const int dpairs = (D + 15) / 16;
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        pa[mt][0] = Elem<T>::pack(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][1] = Elem<T>::pack(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][2] = Elem<T>::pack(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][3] = Elem<T>::pack(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        if (dp < dpairs) {
          uint32_t vb[4];
          ldmatrixX4Trans(vb, cV + (kk * 16 + ((lane / 8) % 2) * 8 + (lane % 8)) * kStride + dp * 16 + (lane / 16) * 8);
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            Elem<T>::mma(oacc[mt][2 * dp], pa[mt], vb[0], vb[1]);
            Elem<T>::mma(oacc[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
          }
        }
      }
    }
    __syncthreads();  // every warp is done with buffer `buf` before the next prefetch refills it
  }
  cpAsyncWait<0>();

  // Normalise, write O and the log-sum-exp. Rows whose keys were all masked have l == 0: zeros.
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r2 = 0; r2 < 2; ++r2) {
      float l = row_l[mt][r2];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int64_t i = m0 + warp_row0 + mt * 16 + lane / 4 + r2 * 8;
      if (i >= p.seq_q) continue;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int d = dt * 8 + 2 * (lane % 4);
        if (d < D) Elem<T>::store2(o + i * p.o_row_stride + d, oacc[mt][dt][2 * r2] * inv, oacc[mt][dt][2 * r2 + 1] * inv);
      }
      if (lse && lane % 4 == 0) lse[i] = l > 0.f ? (row_m[mt][r2] + log2f(l)) * 0.69314718055994531f : -INFINITY;
    }
}

template <typename T, int kD, int kBM, int kBN, int kWarps>
void launchMma(const FlashParams& p, cudaStream_t stream) {
  constexpr int kSmem = static_cast<int>(mmaSmemBytes(kD, static_cast<int>(sizeof(T))));
  static_assert(mmaTile(kD).block_m == kBM && mmaTile(kD).block_n == kBN && mmaTile(kD).warps == kWarps,
                "launch through launchMmaBucket, whose tile is flash_tiling.h's");
  auto kernel = &flashFwdMma<T, kD, kBM, kBN, kWarps>;
  if (kSmem > 48 * 1024)
    ATTNSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid(static_cast<unsigned>((p.seq_q + kBM - 1) / kBM), static_cast<unsigned>(p.heads),
                  static_cast<unsigned>(p.batch));
  kernel<<<grid, kWarps * 32, kSmem, stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH("flash_fwd_mma");
}

// The tile of each head-dim bucket comes from flash_tiling.h, which selectFlashKernel reads too.
template <typename T, int kD>
void launchMmaBucket(const FlashParams& p, cudaStream_t stream) {
  constexpr FlashTile kTile = mmaTile(kD);
  launchMma<T, kD, kTile.block_m, kTile.block_n, kTile.warps>(p, stream);
}

}  // namespace attnscope::cuda::mma
