// cuda.flash's backward for pass = train: the FlashAttention-2 algorithm on SIMT units. The
// forward saved O and the log-sum-exp; here every (query block, key tile) pair recomputes
//   P = exp(scale * Q K^T - lse),  dP = dO V^T,  dS = P * (dP - delta),  delta_i = dO_i . O_i
// (delta recomputed per query block from O and dO: D products per row, no [B, H, Lq] buffer).
//
// dQ in a separate kernel, not with FA2's atomic adds. Kernel 1 (one block per key tile of a KV
// head) accumulates dK and dV over every query block of every head of the GQA group in shared
// memory; kernel 2 (one block per query block of a head) accumulates dQ over its key tiles.
// Why: atomics would need a [B, H, Lq, D] fp32 dQ accumulator (a buffer the plan must carry, plus
// a conversion kernel for fp16/bf16) and make the sums depend on block scheduling, so two runs of
// one point would differ in the last bits; the second kernel costs recomputing P and dP once
// more (about 7 tile products per pair instead of 5). cpu.flash makes the same choice.
//
// Inputs are converted to fp32 in shared memory and every product is fp32 (correctness over
// speed: no tensor cores, runtime head_dim); the gradients are rounded to the input type once.
// Tiles, layout and grids come from flash_bwd_tiling.h, shared with the host tests.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/flash_bwd_tiling.h"

namespace attnscope::cuda {
namespace {

__device__ __forceinline__ float loadF(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float loadF(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float loadF(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void storeF(float* p, int64_t i, float x) { p[i] = x; }
__device__ __forceinline__ void storeF(__half* p, int64_t i, float x) { p[i] = __float2half_rn(x); }
__device__ __forceinline__ void storeF(__nv_bfloat16* p, int64_t i, float x) { p[i] = __float2bfloat16_rn(x); }

// rows x D values from src rows [r0, r0 + rows) into dst (fp32); rows at or past `limit` are zero,
// so a ragged last tile contributes nothing (0 * garbage could be NaN).
template <typename T>
__device__ void loadRows(float* dst, const T* src, int64_t row_stride, int64_t r0, int64_t limit, int64_t rows,
                         int64_t D) {
  for (int64_t c = threadIdx.x; c < rows * D; c += blockDim.x) {
    const int64_t r = c / D, d = c % D;
    dst[c] = r0 + r < limit ? loadF(src, (r0 + r) * row_stride + d) : 0.f;
  }
}

// The pointers and sizes of one (batch, query head) as the kernels use them.
template <typename T>
struct HeadView {
  const T *q, *k, *v, *o, *g;
  const float* lse;        // [Lq] of this head
  const uint8_t* mask;     // this head's plane, or nullptr
  int64_t q_row, k_row, v_row, o_row, mask_row;
};

template <typename T>
__device__ HeadView<T> headView(const FlashBwdParams& bp, int64_t b, int64_t h) {
  const FlashParams& p = bp.fwd;
  const int64_t hk = h / (p.heads / p.kv_heads);
  HeadView<T> w;
  w.q = static_cast<const T*>(p.q) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  w.g = static_cast<const T*>(bp.g) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  w.o = static_cast<const T*>(p.o) + rowOffset(b, h, 0, p.o_batch_stride, p.o_head_stride, 0);
  w.k = static_cast<const T*>(p.k) + rowOffset(b, hk, 0, p.k_batch_stride, p.k_head_stride, 0);
  w.v = static_cast<const T*>(p.v) + rowOffset(b, hk, 0, p.v_batch_stride, p.v_head_stride, 0);
  w.lse = p.lse + (b * p.heads + h) * p.seq_q;
  w.mask = p.mask ? p.mask + rowOffset(b, h, 0, p.mask_batch_stride, p.mask_head_stride, 0) : nullptr;
  w.q_row = p.q_row_stride;
  w.k_row = p.k_row_stride;
  w.v_row = p.v_row_stride;
  w.o_row = p.o_row_stride;
  w.mask_row = p.mask_row_stride;
  return w;
}

// Q and dO of query rows [m0, m0 + bm) into shared memory, with delta and lse per row.
template <typename T>
__device__ void loadQueryBlock(float* s, const FlashBwdLayout& L, const FlashParams& p, const HeadView<T>& w,
                               int64_t m0) {
  loadRows(s + L.q, w.q, w.q_row, m0, p.seq_q, L.bm, L.d);
  loadRows(s + L.g, w.g, w.q_row, m0, p.seq_q, L.bm, L.d);
  __syncthreads();
  for (int64_t r = threadIdx.x; r < L.bm; r += blockDim.x) {
    const int64_t i = m0 + r;
    float delta = 0.f;
    if (i < p.seq_q)
      for (int64_t d = 0; d < L.d; ++d) delta += s[L.g + r * L.d + d] * loadF(w.o, i * w.o_row + d);
    s[L.delta + r] = delta;
    s[L.lse + r] = i < p.seq_q ? w.lse[i] : -INFINITY;
  }
  __syncthreads();
}

// P and dS of query rows [m0, m0 + bm) against keys [n0, n0 + bn), both already in shared
// memory; zero wherever the key is out of range, masked, or the row sees no key (lse -inf).
template <typename T>
__device__ void probsAndDs(float* s, const FlashBwdLayout& L, const FlashParams& p, const HeadView<T>& w, int64_t m0,
                           int64_t n0) {
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  for (int64_t e = threadIdx.x; e < L.bm * L.bn; e += blockDim.x) {
    const int64_t r = e / L.bn, c = e % L.bn;
    const int64_t i = m0 + r, j = n0 + c;
    const float lse = s[L.lse + r];
    bool visible = i < p.seq_q && j < p.seq_kv && lse != -INFINITY &&
                   keyVisible(mk, p.mask_width, i, j, p.seq_q, p.seq_kv);
    if (visible && w.mask) visible = w.mask[i * w.mask_row + j] != 0;
    float prob = 0.f, ds = 0.f;
    if (visible) {
      float qk = 0.f, dp = 0.f;
      for (int64_t d = 0; d < L.d; ++d) {
        qk += s[L.q + r * L.d + d] * s[L.k + c * L.d + d];
        dp += s[L.g + r * L.d + d] * s[L.v + c * L.d + d];
      }
      prob = expf(p.scale * qk - lse);
      ds = prob * (dp - s[L.delta + r]);
    }
    s[L.p + e] = prob;
    s[L.ds + e] = ds;
  }
  __syncthreads();
}

// Kernel 1: dK and dV of one key tile of one KV head, summed over the group's query heads.
template <typename T>
__global__ void __launch_bounds__(kFlashBwdThreads) flashBwdKeys(const FlashBwdParams bp) {
  extern __shared__ float smem[];
  const FlashParams& p = bp.fwd;
  const FlashBwdLayout L = flashBwdLayout(p.head_dim);
  const int64_t tile = blockIdx.x, kvh = blockIdx.y, b = blockIdx.z;
  const int64_t n0 = tile * L.bn;
  const int64_t group = p.heads / p.kv_heads;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  float* dk = smem + L.acc;
  float* dv = dk + L.bn * L.d;

  const HeadView<T> first = headView<T>(bp, b, kvh * group);
  loadRows(smem + L.k, first.k, first.k_row, n0, p.seq_kv, L.bn, L.d);
  loadRows(smem + L.v, first.v, first.v_row, n0, p.seq_kv, L.bn, L.d);
  for (int64_t e = threadIdx.x; e < 2 * L.bn * L.d; e += blockDim.x) dk[e] = 0.f;

  for (int64_t g = 0; g < group; ++g) {
    const HeadView<T> w = headView<T>(bp, b, kvh * group + g);
    for (int64_t m0 = 0; m0 < p.seq_q; m0 += L.bm) {
      const int64_t m1 = m0 + L.bm < p.seq_q ? m0 + L.bm : p.seq_q;
      if (!queryBlockSeesKeyTile(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, L.bn, tile)) continue;
      __syncthreads();  // the previous block's tiles are consumed (and K, V written the first time)
      loadQueryBlock(smem, L, p, w, m0);
      probsAndDs(smem, L, p, w, m0, n0);
      // dV += P^T dO, dK += scale dS^T Q. Each thread owns the same (key, d) elements every time.
      for (int64_t e = threadIdx.x; e < L.bn * L.d; e += blockDim.x) {
        const int64_t c = e / L.d, d = e % L.d;
        float sv = 0.f, sk = 0.f;
        for (int64_t r = 0; r < L.bm; ++r) {
          sv += smem[L.p + r * L.bn + c] * smem[L.g + r * L.d + d];
          sk += smem[L.ds + r * L.bn + c] * smem[L.q + r * L.d + d];
        }
        dv[e] += sv;
        dk[e] += p.scale * sk;
      }
    }
  }
  __syncthreads();
  T* dk_out = static_cast<T*>(bp.dk) + rowOffset(b, kvh, 0, p.k_batch_stride, p.k_head_stride, 0);
  T* dv_out = static_cast<T*>(bp.dv) + rowOffset(b, kvh, 0, p.v_batch_stride, p.v_head_stride, 0);
  for (int64_t e = threadIdx.x; e < L.bn * L.d; e += blockDim.x) {
    const int64_t c = e / L.d, d = e % L.d;
    if (n0 + c >= p.seq_kv) continue;
    storeF(dk_out, (n0 + c) * p.k_row_stride + d, dk[e]);
    storeF(dv_out, (n0 + c) * p.v_row_stride + d, dv[e]);
  }
}

// Kernel 2: dQ of one query block of one head over the key tiles its queries see.
template <typename T>
__global__ void __launch_bounds__(kFlashBwdThreads) flashBwdQueries(const FlashBwdParams bp) {
  extern __shared__ float smem[];
  const FlashParams& p = bp.fwd;
  const FlashBwdLayout L = flashBwdLayout(p.head_dim);
  const int64_t m0 = static_cast<int64_t>(blockIdx.x) * L.bm, h = blockIdx.y, b = blockIdx.z;
  const int64_t m1 = m0 + L.bm < p.seq_q ? m0 + L.bm : p.seq_q;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  float* dq = smem + L.acc;
  const HeadView<T> w = headView<T>(bp, b, h);

  for (int64_t e = threadIdx.x; e < L.bm * L.d; e += blockDim.x) dq[e] = 0.f;
  loadQueryBlock(smem, L, p, w, m0);
  const KeyTileSpan span = keyTileSpan(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, L.bn);
  for (int64_t t = span.first; t < span.last; ++t) {
    const int64_t n0 = t * L.bn;
    __syncthreads();  // the previous tile's dS and K are consumed
    loadRows(smem + L.k, w.k, w.k_row, n0, p.seq_kv, L.bn, L.d);
    loadRows(smem + L.v, w.v, w.v_row, n0, p.seq_kv, L.bn, L.d);
    __syncthreads();
    probsAndDs(smem, L, p, w, m0, n0);
    // dQ += scale dS K.
    for (int64_t e = threadIdx.x; e < L.bm * L.d; e += blockDim.x) {
      const int64_t r = e / L.d, d = e % L.d;
      float acc = 0.f;
      for (int64_t c = 0; c < L.bn; ++c) acc += smem[L.ds + r * L.bn + c] * smem[L.k + c * L.d + d];
      dq[e] += p.scale * acc;
    }
  }
  __syncthreads();
  // Every row is written, those that see no key with zeros.
  T* dq_out = static_cast<T*>(bp.dq) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  for (int64_t e = threadIdx.x; e < L.bm * L.d; e += blockDim.x) {
    const int64_t r = e / L.d, d = e % L.d;
    if (m0 + r < p.seq_q) storeF(dq_out, (m0 + r) * p.q_row_stride + d, dq[e]);
  }
}

template <typename Kernel>
void launch(Kernel kernel, const Grid3& g, const FlashBwdParams& p, cudaStream_t stream, const char* name) {
  const int64_t smem = flashBwdSmemBytes(p.fwd.head_dim);
  if (smem > 48 * 1024)
    ATTNSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z));
  kernel<<<grid, kFlashBwdThreads, static_cast<size_t>(smem), stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH(name);
}

}  // namespace

void launchFlashBackwardKeys(const FlashBwdParams& p, cudaStream_t stream) {
  const Grid3 g = flashBwdKeyGrid(p.fwd.batch, p.fwd.kv_heads, p.fwd.seq_kv, p.fwd.head_dim);
  switch (p.fwd.dtype) {
    case ElemType::fp32: return launch(flashBwdKeys<float>, g, p, stream, "flash_bwd_keys<fp32>");
    case ElemType::fp16: return launch(flashBwdKeys<__half>, g, p, stream, "flash_bwd_keys<fp16>");
    case ElemType::bf16: return launch(flashBwdKeys<__nv_bfloat16>, g, p, stream, "flash_bwd_keys<bf16>");
  }
}

void launchFlashBackwardQueries(const FlashBwdParams& p, cudaStream_t stream) {
  const Grid3 g = flashBwdQueryGrid(p.fwd.batch, p.fwd.heads, p.fwd.seq_q, p.fwd.head_dim);
  switch (p.fwd.dtype) {
    case ElemType::fp32: return launch(flashBwdQueries<float>, g, p, stream, "flash_bwd_queries<fp32>");
    case ElemType::fp16: return launch(flashBwdQueries<__half>, g, p, stream, "flash_bwd_queries<fp16>");
    case ElemType::bf16: return launch(flashBwdQueries<__nv_bfloat16>, g, p, stream, "flash_bwd_queries<bf16>");
  }
}

}  // namespace attnscope::cuda
