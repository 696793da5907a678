#pragma once
// The bodies of cuda.flash's two backward kernels (flash_bwd.cu says what they compute and why
// dQ is a separate pass). Written once for two callers: flash_bwd.cu wraps them in __global__
// kernels with a Block of CUDA threads, and the host test (test_cuda_flash_bwd_serial.cpp) runs
// every block of the grid with a Block of one thread, against the float64 reference. With one
// thread every `for (e = tid; e < n; e += threads)` loop covers all of its elements and sync()
// is a no-op, so the host run executes the same index arithmetic, masking and accumulation order
// per element as the device. The test also runs blocks of five host threads with a barrier for
// sync(), where a shared value read before the sync that publishes it, or written by two
// threads, shows (each loop writes only elements indexed by its own e).
//
// Block: tid(), threads(), sync(). Elem: Storage (the element type in memory), load(const
// Storage*, int64_t) -> float and store(Storage*, int64_t, float).

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/flash_bwd_tiling.h"
#include "kernels/cuda/flash_params.h"

#ifdef __CUDACC__
#define ATTNSCOPE_BWD_BODY __device__
#else
#define ATTNSCOPE_BWD_BODY inline
#endif

namespace attnscope::cuda::flashbwd {

// rows x D values from src rows [r0, r0 + rows) into dst (fp32); rows at or past `limit` are zero,
// so a ragged last tile contributes nothing (0 * garbage could be NaN).
template <typename Elem, typename Block>
ATTNSCOPE_BWD_BODY void loadRows(const Block& blk, float* dst, const typename Elem::Storage* src, int64_t row_stride,
                                 int64_t r0, int64_t limit, int64_t rows, int64_t D) {
  for (int64_t c = blk.tid(); c < rows * D; c += blk.threads()) {
    const int64_t r = c / D, d = c % D;
    dst[c] = r0 + r < limit ? Elem::load(src, (r0 + r) * row_stride + d) : 0.f;
  }
}

// The pointers of one (batch, query head) as the kernels use them.
template <typename Elem>
struct HeadView {
  using S = typename Elem::Storage;
  const S *q, *k, *v, *o, *g;
  const float* lse;     // [Lq] of this head
  const uint8_t* mask;  // this head's plane, or nullptr
};

template <typename Elem>
ATTNSCOPE_BWD_BODY HeadView<Elem> headView(const FlashBwdParams& bp, int64_t b, int64_t h) {
  using S = typename Elem::Storage;
  const FlashParams& p = bp.fwd;
  const int64_t hk = h / (p.heads / p.kv_heads);
  HeadView<Elem> w;
  w.q = static_cast<const S*>(p.q) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  w.g = static_cast<const S*>(bp.g) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  w.o = static_cast<const S*>(p.o) + rowOffset(b, h, 0, p.o_batch_stride, p.o_head_stride, 0);
  w.k = static_cast<const S*>(p.k) + rowOffset(b, hk, 0, p.k_batch_stride, p.k_head_stride, 0);
  w.v = static_cast<const S*>(p.v) + rowOffset(b, hk, 0, p.v_batch_stride, p.v_head_stride, 0);
  w.lse = p.lse + (b * p.heads + h) * p.seq_q;
  w.mask = p.mask ? p.mask + rowOffset(b, h, 0, p.mask_batch_stride, p.mask_head_stride, 0) : nullptr;
  return w;
}

// Q and dO of query rows [m0, m0 + bm) into shared memory, with delta = dO . O and lse per row.
template <typename Elem, typename Block>
ATTNSCOPE_BWD_BODY void loadQueryBlock(const Block& blk, float* s, const FlashBwdLayout& L, const FlashParams& p,
                                       const HeadView<Elem>& w, int64_t m0) {
  loadRows<Elem>(blk, s + L.q, w.q, p.q_row_stride, m0, p.seq_q, L.bm, L.d);
  loadRows<Elem>(blk, s + L.g, w.g, p.q_row_stride, m0, p.seq_q, L.bm, L.d);
  blk.sync();
  for (int64_t r = blk.tid(); r < L.bm; r += blk.threads()) {
    const int64_t i = m0 + r;
    float delta = 0.f;
    if (i < p.seq_q)
      for (int64_t d = 0; d < L.d; ++d) delta += s[L.g + r * L.d + d] * Elem::load(w.o, i * p.o_row_stride + d);
    s[L.delta + r] = delta;
    s[L.lse + r] = i < p.seq_q ? w.lse[i] : -INFINITY;
  }
  blk.sync();
}

// P and dS of query rows [m0, m0 + bm) against keys [n0, n0 + bn), both already in shared
// memory; zero wherever the key is out of range, masked, or the row sees no key (lse -inf).
template <typename Elem, typename Block>
ATTNSCOPE_BWD_BODY void probsAndDs(const Block& blk, float* s, const FlashBwdLayout& L, const FlashParams& p,
                                   const HeadView<Elem>& w, int64_t m0, int64_t n0) {
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  for (int64_t e = blk.tid(); e < L.bm * L.bn; e += blk.threads()) {
    const int64_t r = e / L.bn, c = e % L.bn;
    const int64_t i = m0 + r, j = n0 + c;
    const float lse = s[L.lse + r];
    bool visible =
        i < p.seq_q && j < p.seq_kv && lse != -INFINITY && keyVisible(mk, p.mask_width, i, j, p.seq_q, p.seq_kv);
    if (visible && w.mask) visible = w.mask[i * p.mask_row_stride + j] != 0;
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
  blk.sync();
}

// Kernel 1, block (tile, kvh, b): dK and dV of one key tile of one KV head, summed over the
// group's query heads, accumulated in fp32 in shared memory and written once.
template <typename Elem, typename Block>
ATTNSCOPE_BWD_BODY void keyTile(const Block& blk, float* smem, const FlashBwdParams& bp, int64_t tile, int64_t kvh,
                                int64_t b) {
  using S = typename Elem::Storage;
  const FlashParams& p = bp.fwd;
  const FlashBwdLayout L = flashBwdLayout(p.head_dim);
  const int64_t n0 = tile * L.bn;
  const int64_t group = p.heads / p.kv_heads;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  float* dk = smem + L.acc;
  float* dv = dk + L.bn * L.d;

  const HeadView<Elem> first = headView<Elem>(bp, b, kvh * group);
  loadRows<Elem>(blk, smem + L.k, first.k, p.k_row_stride, n0, p.seq_kv, L.bn, L.d);
  loadRows<Elem>(blk, smem + L.v, first.v, p.v_row_stride, n0, p.seq_kv, L.bn, L.d);
  for (int64_t e = blk.tid(); e < 2 * L.bn * L.d; e += blk.threads()) dk[e] = 0.f;

  for (int64_t g = 0; g < group; ++g) {
    const HeadView<Elem> w = headView<Elem>(bp, b, kvh * group + g);
    for (int64_t m0 = 0; m0 < p.seq_q; m0 += L.bm) {
      const int64_t m1 = m0 + L.bm < p.seq_q ? m0 + L.bm : p.seq_q;
      if (!queryBlockSeesKeyTile(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, L.bn, tile)) continue;
      blk.sync();  // the previous block's tiles are consumed (and K, V written the first time)
      loadQueryBlock<Elem>(blk, smem, L, p, w, m0);
      probsAndDs<Elem>(blk, smem, L, p, w, m0, n0);
      // dV += P^T dO, dK += scale dS^T Q. Each thread owns the same (key, d) elements every time.
      for (int64_t e = blk.tid(); e < L.bn * L.d; e += blk.threads()) {
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
  blk.sync();
  S* dk_out = static_cast<S*>(bp.dk) + rowOffset(b, kvh, 0, p.k_batch_stride, p.k_head_stride, 0);
  S* dv_out = static_cast<S*>(bp.dv) + rowOffset(b, kvh, 0, p.v_batch_stride, p.v_head_stride, 0);
  for (int64_t e = blk.tid(); e < L.bn * L.d; e += blk.threads()) {
    const int64_t c = e / L.d, d = e % L.d;
    if (n0 + c >= p.seq_kv) continue;
    Elem::store(dk_out, (n0 + c) * p.k_row_stride + d, dk[e]);
    Elem::store(dv_out, (n0 + c) * p.v_row_stride + d, dv[e]);
  }
}

// Kernel 2, block (query block, h, b): dQ of one query block of one head over the key tiles its
// queries see. Every row is written, those that see no key with zeros.
template <typename Elem, typename Block>
ATTNSCOPE_BWD_BODY void queryBlock(const Block& blk, float* smem, const FlashBwdParams& bp, int64_t qblock, int64_t h,
                                   int64_t b) {
  using S = typename Elem::Storage;
  const FlashParams& p = bp.fwd;
  const FlashBwdLayout L = flashBwdLayout(p.head_dim);
  const int64_t m0 = qblock * L.bm;
  const int64_t m1 = m0 + L.bm < p.seq_q ? m0 + L.bm : p.seq_q;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  float* dq = smem + L.acc;
  const HeadView<Elem> w = headView<Elem>(bp, b, h);

  for (int64_t e = blk.tid(); e < L.bm * L.d; e += blk.threads()) dq[e] = 0.f;
  loadQueryBlock<Elem>(blk, smem, L, p, w, m0);
  const KeyTileSpan span = keyTileSpan(mk, p.mask_width, m0, m1, p.seq_q, p.seq_kv, L.bn);
  for (int64_t t = span.first; t < span.last; ++t) {
    const int64_t n0 = t * L.bn;
    blk.sync();  // the previous tile's dS and K are consumed
    loadRows<Elem>(blk, smem + L.k, w.k, p.k_row_stride, n0, p.seq_kv, L.bn, L.d);
    loadRows<Elem>(blk, smem + L.v, w.v, p.v_row_stride, n0, p.seq_kv, L.bn, L.d);
    blk.sync();
    probsAndDs<Elem>(blk, smem, L, p, w, m0, n0);
    // dQ += scale dS K.
    for (int64_t e = blk.tid(); e < L.bm * L.d; e += blk.threads()) {
      const int64_t r = e / L.d, d = e % L.d;
      float acc = 0.f;
      for (int64_t c = 0; c < L.bn; ++c) acc += smem[L.ds + r * L.bn + c] * smem[L.k + c * L.d + d];
      dq[e] += p.scale * acc;
    }
  }
  blk.sync();
  S* dq_out = static_cast<S*>(bp.dq) + rowOffset(b, h, 0, p.q_batch_stride, p.q_head_stride, 0);
  for (int64_t e = blk.tid(); e < L.bm * L.d; e += blk.threads()) {
    const int64_t r = e / L.d, d = e % L.d;
    if (m0 + r < p.seq_q) Elem::store(dq_out, (m0 + r) * p.q_row_stride + d, dq[e]);
  }
}

}  // namespace attnscope::cuda::flashbwd
