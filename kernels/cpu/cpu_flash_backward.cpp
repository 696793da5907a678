#include "kernels/cpu/cpu_flash_backward.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

#include "core/spec/mask.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/softmax_math.h"
#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// bf16 workloads on a variant with bf16 products (avx512_bf16, amx_bf16) run the five products
// on bf16 pairs with fp32 accumulation, as the forward does and as torch's CPU flash backward
// does: Q, K, V and dO as stored, P and dS rounded to bf16 for the products that read them.
bool backwardPairs(const WorkloadSpec& s, const TileKernels& kn) {
  return kn.gemm_pairs != nullptr && s.dtype == DType::bf16;
}

// One worker's scratch, in two tracked float buffers (64-byte aligned parts).
//
// Tiles (fixed size): kt, vt: K^T and V^T of the key tile packed; kk: K of the key tile packed as
// a right-hand side, where K's rows cannot be read in place (a dtype other than fp32, or a head_dim
// that is not whole kernel strips); s: P; dp: dP then dS; o, g: a query tile's O (every dtype but
// fp32) and dO (bf16 pairs, which keep no fp32 dO) in fp32, for delta. bf16 pairs: ktp, vtp, kkp: K^T, V^T and K in pairs;
// r16: P or dS rounded (rows even-padded); t16: its transpose.
//
// Query rows (sized by the head, Lq rows): delta and lse2 per row; the query side of every
// product of the head, made once per head and read by every key tile: fp32 Q and dO rows (qh, gh)
// where they are not fp32 in the tensors, and packed per query tile as right-hand sides (qph,
// gph) where their rows are not whole strips; bf16 pairs: Q and dO rows even-padded (q16h, g16h,
// for an odd head_dim only) and packed in pairs per query tile (qpph, gpph); dqh: the head's dQ
// in fp32 where dQ is not fp32 (fp32 accumulates in the tensor itself).
struct BackwardScratch {
  bool pairs = false;
  int64_t bq = 0, bk = 0, d = 0, d2 = 0, bq2 = 0, bk2 = 0, query_tiles = 0;
  // Tiles.
  int64_t kt = -1, vt = -1, kk = -1, s = 0, dp = 0, g = -1, o = -1, ktp = -1, vtp = -1, kkp = -1, r16 = -1, t16 = -1,
          tile_floats = 0;
  // Query rows.
  int64_t delta = 0, lse = 0, qh = -1, gh = -1, qph = -1, gph = -1, q16h = -1, g16h = -1, qpph = -1, gpph = -1,
          dqh = -1, chunk = 0, row_floats = 0;

  static BackwardScratch of(const WorkloadSpec& spec, const TileKernels& kn) {
    BackwardScratch x;
    x.pairs = backwardPairs(spec, kn);
    const bool fp32 = spec.dtype == DType::fp32;
    const int64_t Lq = spec.seq_q;
    x.bq = std::min(kBackwardQueryTile, Lq);
    x.bk = std::min(kBackwardKeyTile, spec.seqKv());
    x.d = spec.headDim();
    x.d2 = (x.d + 1) / 2 * 2;
    x.bq2 = (x.bq + 1) / 2 * 2;
    x.bk2 = (x.bk + 1) / 2 * 2;
    x.query_tiles = (Lq + x.bq - 1) / x.bq;
    int64_t at = 0;
    auto take = [&](int64_t n) {
      const int64_t here = at;
      at += (n + 15) / 16 * 16;
      return here;
    };
    auto halves = [&](int64_t n) { return take((n + 1) / 2); };  // n bf16 values
    if (x.pairs) {
      x.ktp = halves(kn.pair_elements(x.d, x.bk));
      x.vtp = halves(kn.pair_elements(x.d, x.bk));
      x.kkp = halves(kn.pair_elements(x.bk, x.d));
      x.r16 = halves(x.bq * x.bk2);
      x.t16 = halves(x.bk * x.bq2);
    } else {
      x.kt = take(kn.packedFloats(x.d, x.bk));
      x.vt = take(kn.packedFloats(x.d, x.bk));
      if (!fp32 || kn.needsPacking(x.d)) x.kk = take(kn.packedFloats(x.bk, x.d));
    }
    x.s = take(x.bq * x.bk);
    x.dp = take(x.bq * x.bk);
    if (!fp32) x.o = take(x.bq * x.d);
    if (x.pairs) x.g = take(x.bq * x.d);
    x.tile_floats = at;

    at = 0;
    x.delta = take(Lq);
    x.lse = take(Lq);
    if (x.pairs) {
      if (x.d % 2) {
        x.q16h = halves(Lq * x.d2);
        x.g16h = halves(Lq * x.d2);
      }
      x.chunk = (kn.pair_elements(x.bq, x.d) + 1) / 2 * 2;  // bf16 values per query tile
      x.qpph = halves(x.query_tiles * x.chunk);
      x.gpph = halves(x.query_tiles * x.chunk);
    } else {
      if (!fp32) {
        x.qh = take(Lq * x.d);
        x.gh = take(Lq * x.d);
      }
      if (kn.needsPacking(x.d)) {
        x.chunk = (kn.packedFloats(x.bq, x.d) + 15) / 16 * 16;  // floats per query tile
        x.qph = take(x.query_tiles * x.chunk);
        x.gph = take(x.query_tiles * x.chunk);
      }
    }
    if (!fp32) x.dqh = take(Lq * x.d);
    x.row_floats = at;
    return x;
  }
};

int workersFor(const WorkloadSpec& s, int threads) {
  return static_cast<int>(std::clamp<int64_t>(s.batch * s.heads, 1, threads));
}

// Whether dK and dV are summed in fp32 buffers per query head ([B, H, Lkv, D] each) and then
// over each group of heads into the tensors, in a second step: always but for fp32 without GQA,
// where each task owns its head's dK and dV and accumulates in place.
bool expandedKv(const WorkloadSpec& s) { return s.dtype != DType::fp32 || s.kvHeads() != s.heads; }

// A right-hand side as gemm / gemm_at read it: strips starting strip_stride floats apart, rows
// ldb floats apart (a packed tile, or fp32 rows of whole strips read in place).
struct Rhs {
  const float* b;
  int64_t ldb, strip_stride;
};

class Backward {
 public:
  Backward(const WorkloadSpec& s, RunTensors& t, const float* lse, RunContext& ctx)
      : s_(s), t_(t), lse_(lse), ctx_(ctx), kn_(activeTileKernels()), x_(BackwardScratch::of(s, kn_)),
        H_(s.heads), Hkv_(s.kvHeads()), Lq_(s.seq_q), Lkv_(s.seqKv()), D_(s.headDim()), group_(H_ / Hkv_),
        elem_(bytesPerElement(s.dtype)), scale_(static_cast<float>(s.effectiveScale())) {}

  const BackwardScratch& scratch() const { return x_; }
  int64_t headTasks() const { return s_.batch * H_; }
  int64_t sumTasks() const { return s_.batch * Hkv_ * keyTiles(); }

  // dQ, dK and dV of one (batch, head), in one pass over its (key tile, query tile) pairs, key
  // tiles outside: five tile products per pair (S, dP, dV += P^T dO, dK += dS^T Q, dQ += dS K).
  // The query side (delta, lse, Q and dO as the products read them) is made once per head, a key
  // tile's K^T, V^T and K are packed once and serve every query tile, and the tile's dK and dV
  // rows stay in cache while its query tiles pass. The task owns its head's dQ rows (fp32: the
  // tensor's; else `dqh`, rounded at the end) and its dK, dV rows (`dk`, `dv`: the fp32 per-head
  // buffers, or the tensors themselves for fp32 without GQA), so no two tasks write the same
  // memory and every sum runs in one fixed order.
  void headTask(float* w, float* rows, int64_t bh, float* dk, float* dv) const {
    const int64_t kv_first = ((bh / H_) * Hkv_ + (bh % H_) / group_) * Lkv_ * D_;
    fillRow(dk, Lkv_ * D_, 0.0f);
    fillRow(dv, Lkv_ * D_, 0.0f);
    float* dq = dqHead(rows, bh);
    fillRow(dq, Lq_ * D_, 0.0f);  // a query row that sees no key has a zero gradient
    loadQueries(w, rows, bh);
    for (int64_t j0 = 0; j0 < Lkv_; j0 += x_.bk) {
      const int64_t nk = std::min(x_.bk, Lkv_ - j0);
      if (!sees(0, Lq_, j0, nk)) continue;
      packKeys(w, kv_first, j0, nk);
      for (int64_t i0 = 0, tile = 0; i0 < Lq_; i0 += x_.bq, ++tile) {
        ctx_.throwIfCancelled();
        const int64_t nq = std::min(x_.bq, Lq_ - i0);
        if (!sees(i0, nq, j0, nk)) continue;
        if (x_.pairs)
          pairProducts(w, rows, bh, tile, i0, nq, j0, nk, dq, dk, dv);
        else
          floatProducts(w, rows, bh, kv_first, tile, i0, nq, j0, nk, dq, dk, dv);
      }
    }
    if (s_.dtype != DType::fp32) fromFloat(s_.dtype, dq, Lq_ * D_, t_.dq.data(), bh * Lq_ * D_);
  }

  // The expanded case's second step: key tile `task` of one (batch, KV head): dK and dV summed over
  // the group's query heads in head order, rounded to the dtype.
  void sumTask(float* dk_heads, float* dv_heads, int64_t task) const {
    const int64_t bkv = task / keyTiles(), j0 = task % keyTiles() * x_.bk;
    const int64_t n = std::min(x_.bk, Lkv_ - j0) * D_;
    const int64_t kv_first = bkv * Lkv_ * D_;
    const int64_t first_head = (bkv / Hkv_) * H_ + (bkv % Hkv_) * group_;
    for (const auto& [heads, out] : {std::pair{dk_heads, t_.dk.data()}, std::pair{dv_heads, t_.dv.data()}}) {
      // Summed into the group's first head's rows (scratch, read by no one after).
      float* acc = heads + (first_head * Lkv_ + j0) * D_;
      for (int64_t g = 1; g < group_; ++g) {
        const float* src = heads + ((first_head + g) * Lkv_ + j0) * D_;
        for (int64_t e = 0; e < n; ++e) acc[e] += src[e];
      }
      fromFloat(s_.dtype, acc, n, out, kv_first + j0 * D_);
    }
  }

 private:
  int64_t keyTiles() const { return (Lkv_ + x_.bk - 1) / x_.bk; }

  // Whether any query row of [i0, i0 + nq) sees a key of [j0, j0 + nk) under the structured mask.
  bool sees(int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
    for (int64_t r = 0; r < nq; ++r) {
      const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq_, Lkv_);
      if (keys.begin < std::min(keys.end, j0 + nk) && keys.end > j0) return true;
    }
    return false;
  }

  float* dqHead(float* rows, int64_t bh) const {
    return s_.dtype == DType::fp32 ? reinterpret_cast<float*>(t_.dq.data()) + bh * Lq_ * D_ : rows + x_.dqh;
  }
  // The head's fp32 Q and dO rows: the tensors' own for fp32, else the converted copies.
  const float* qRows(const float* rows, int64_t bh) const {
    return s_.dtype == DType::fp32 ? reinterpret_cast<const float*>(t_.q.data()) + bh * Lq_ * D_ : rows + x_.qh;
  }
  const float* gRows(const float* rows, int64_t bh) const {
    return s_.dtype == DType::fp32 ? reinterpret_cast<const float*>(t_.g.data()) + bh * Lq_ * D_ : rows + x_.gh;
  }
  // Query tile `tile`'s Q or dO (from `head_rows`, or `packed`'s chunk) as a right-hand side.
  Rhs queryRhs(const float* head_rows, const float* rows, int64_t packed, int64_t tile, int64_t i0, int64_t nq) const {
    if (packed < 0) return {head_rows + i0 * D_, D_, kn_.nr};
    return {rows + packed + tile * x_.chunk, kn_.nr, nq * kn_.nr};
  }

  // The head's query side, once per task: delta and lse2 per row, Q and dO rows in fp32 (or bf16
  // rows even-padded), and each query tile's Q and dO packed as right-hand sides where needed.
  void loadQueries(float* w, float* rows, int64_t bh) const {
    const int64_t first = bh * Lq_ * D_;
    const bool fp32 = s_.dtype == DType::fp32;
    if (!x_.pairs && !fp32) {
      toFloat(s_.dtype, t_.q.data(), first, Lq_ * D_, rows + x_.qh);
      toFloat(s_.dtype, t_.g.data(), first, Lq_ * D_, rows + x_.gh);
    }
    for (int64_t i0 = 0, tile = 0; i0 < Lq_; i0 += x_.bq, ++tile) {
      const int64_t nq = std::min(x_.bq, Lq_ - i0);
      // delta_i = dO_i . O_i from fp32 rows: the tensors' own for fp32, the head's converted dO
      // (gh) for the other fp32 products, the tile converted here for bf16 pairs.
      const float* g = x_.pairs ? w + x_.g : gRows(rows, bh) + i0 * D_;
      const float* o = fp32 ? reinterpret_cast<const float*>(t_.o.data()) + first + i0 * D_ : w + x_.o;
      if (x_.pairs) toFloat(s_.dtype, t_.g.data(), first + i0 * D_, nq * D_, w + x_.g);
      if (!fp32) toFloat(s_.dtype, t_.o.data(), first + i0 * D_, nq * D_, w + x_.o);
      for (int64_t r = 0; r < nq; ++r) {
        float delta = 0.0f;
        for (int64_t d = 0; d < D_; ++d) delta += g[r * D_ + d] * o[r * D_ + d];
        rows[x_.delta + i0 + r] = delta;
        rows[x_.lse + i0 + r] = lse_[bh * Lq_ + i0 + r] * std::numbers::log2e_v<float>;
      }
      if (x_.pairs) {
        const auto* q = reinterpret_cast<const uint16_t*>(t_.q.data()) + first + i0 * D_;
        const auto* gg = reinterpret_cast<const uint16_t*>(t_.g.data()) + first + i0 * D_;
        kn_.pack_pairs(q, D_, false, nq, D_, bf16(rows, x_.qpph) + tile * x_.chunk);
        kn_.pack_pairs(gg, D_, false, nq, D_, bf16(rows, x_.gpph) + tile * x_.chunk);
      } else if (x_.qph >= 0) {
        kn_.pack_b(DType::fp32, qRows(rows, bh) + i0 * D_, D_, false, nq, D_, rows + x_.qph + tile * x_.chunk);
        kn_.pack_b(DType::fp32, gRows(rows, bh) + i0 * D_, D_, false, nq, D_, rows + x_.gph + tile * x_.chunk);
      }
    }
    if (x_.pairs && x_.q16h >= 0) {
      const auto* q = reinterpret_cast<const uint16_t*>(t_.q.data()) + first;
      const auto* g = reinterpret_cast<const uint16_t*>(t_.g.data()) + first;
      for (auto [src, at] : {std::pair{q, x_.q16h}, std::pair{g, x_.g16h}}) {
        uint16_t* out = bf16(rows, at);
        for (int64_t r = 0; r < Lq_; ++r) {
          std::copy(src + r * D_, src + (r + 1) * D_, out + r * x_.d2);
          out[r * x_.d2 + D_] = 0;
        }
      }
    }
  }

  // The key tile's K^T, V^T and K as the products read them, once per key tile.
  void packKeys(float* w, int64_t kv_first, int64_t j0, int64_t nk) const {
    if (x_.pairs) {
      const auto* k = reinterpret_cast<const uint16_t*>(t_.k.data()) + kv_first + j0 * D_;
      const auto* v = reinterpret_cast<const uint16_t*>(t_.v.data()) + kv_first + j0 * D_;
      kn_.pack_pairs(k, D_, true, D_, nk, bf16(w, x_.ktp));
      kn_.pack_pairs(v, D_, true, D_, nk, bf16(w, x_.vtp));
      kn_.pack_pairs(k, D_, false, nk, D_, bf16(w, x_.kkp));
      return;
    }
    const uint8_t* k = t_.k.data() + (kv_first + j0 * D_) * elem_;
    const uint8_t* v = t_.v.data() + (kv_first + j0 * D_) * elem_;
    kn_.pack_b(s_.dtype, k, D_, true, D_, nk, w + x_.kt);
    kn_.pack_b(s_.dtype, v, D_, true, D_, nk, w + x_.vt);
    if (x_.kk >= 0) kn_.pack_b(s_.dtype, k, D_, false, nk, D_, w + x_.kk);
  }

  // The five products of one (key tile, query tile) pair in fp32: K^T and V^T of the key tile
  // packed; Q, dO and K (fp32 rows of whole strips) read in place, or packed.
  void floatProducts(float* w, const float* rows, int64_t bh, int64_t kv_first, int64_t tile, int64_t i0, int64_t nq,
                     int64_t j0, int64_t nk, float* dq, float* dk, float* dv) const {
    const float* q = qRows(rows, bh) + i0 * D_;
    const float* g = gRows(rows, bh) + i0 * D_;
    // Scores in base 2, so P = exp2(s - lse2) with the variant's exp2.
    kn_.gemmPacked(nq, nk, D_, scale_ * std::numbers::log2e_v<float>, q, D_, w + x_.kt, 0.0f, w + x_.s, nk);
    kn_.gemmPacked(nq, nk, D_, 1.0f, g, D_, w + x_.vt, 0.0f, w + x_.dp, nk);
    probsAndDs(w, rows, bh, i0, nq, j0, nk);
    // dV += P^T dO, dK += scale dS^T Q: P and dS are the left-hand sides read transposed in place
    // (gemm_at; until 2026-12 a transposed copy of each, 0.7 ns per element).
    const Rhs gb = queryRhs(gRows(rows, bh), rows, x_.gph, tile, i0, nq);
    const Rhs qb = queryRhs(qRows(rows, bh), rows, x_.qph, tile, i0, nq);
    kn_.gemm_at(nk, D_, nq, 1.0f, w + x_.s, nk, gb.b, gb.ldb, gb.strip_stride, 1.0f, dv + j0 * D_, D_);
    kn_.gemm_at(nk, D_, nq, scale_, w + x_.dp, nk, qb.b, qb.ldb, qb.strip_stride, 1.0f, dk + j0 * D_, D_);
    if (x_.kk >= 0)
      kn_.gemmPacked(nq, D_, nk, scale_, w + x_.dp, nk, w + x_.kk, 1.0f, dq + i0 * D_, D_);
    else
      kn_.gemmRows(nq, D_, nk, scale_, w + x_.dp, nk, reinterpret_cast<const float*>(t_.k.data()) + kv_first + j0 * D_,
                   D_, 1.0f, dq + i0 * D_, D_);
  }

  // The same five on bf16 pairs: Q and dO rows as stored (or even-padded) and packed per query
  // tile; K^T, V^T and K of the key tile packed in pairs; P and dS rounded to bf16 (r16) and
  // transposed (t16) for the products that read them.
  void pairProducts(float* w, float* rows, int64_t bh, int64_t tile, int64_t i0, int64_t nq, int64_t j0, int64_t nk,
                    float* dq, float* dk, float* dv) const {
    const uint16_t *q = nullptr, *g = nullptr;
    int64_t lda = D_;
    if (x_.q16h >= 0) {
      q = bf16(rows, x_.q16h) + i0 * x_.d2;
      g = bf16(rows, x_.g16h) + i0 * x_.d2;
      lda = x_.d2;
    } else {
      q = reinterpret_cast<const uint16_t*>(t_.q.data()) + (bh * Lq_ + i0) * D_;
      g = reinterpret_cast<const uint16_t*>(t_.g.data()) + (bh * Lq_ + i0) * D_;
    }
    kn_.gemm_pairs(nq, nk, D_, scale_ * std::numbers::log2e_v<float>, q, lda, bf16(w, x_.ktp), 0.0f, w + x_.s, nk);
    kn_.gemm_pairs(nq, nk, D_, 1.0f, g, lda, bf16(w, x_.vtp), 0.0f, w + x_.dp, nk);
    probsAndDs(w, rows, bh, i0, nq, j0, nk);
    uint16_t* r = bf16(w, x_.r16);
    uint16_t* t = bf16(w, x_.t16);
    roundRows(w + x_.s, nq, nk, r);
    transposeBf16(r, nq, nk, t);
    kn_.gemm_pairs(nk, D_, nq, 1.0f, t, x_.bq2, bf16(rows, x_.gpph) + tile * x_.chunk, 1.0f, dv + j0 * D_, D_);
    roundRows(w + x_.dp, nq, nk, r);
    transposeBf16(r, nq, nk, t);
    kn_.gemm_pairs(nk, D_, nq, scale_, t, x_.bq2, bf16(rows, x_.qpph) + tile * x_.chunk, 1.0f, dk + j0 * D_, D_);
    kn_.gemm_pairs(nq, D_, nk, scale_, r, x_.bk2, bf16(w, x_.kkp), 1.0f, dq + i0 * D_, D_);
  }

  static uint16_t* bf16(float* w, int64_t at) { return reinterpret_cast<uint16_t*>(w + at); }
  static const uint16_t* bf16(const float* w, int64_t at) { return reinterpret_cast<const uint16_t*>(w + at); }

  // rows x cols fp32 rounded to bf16 rows of x_.bk2 (the pad element zero, as the pair products
  // read it).
  void roundRows(const float* in, int64_t rows, int64_t cols, uint16_t* out) const {
    for (int64_t r = 0; r < rows; ++r) {
      kn_.round_bf16(in + r * cols, cols, out + r * x_.bk2);
      if (cols % 2) out[r * x_.bk2 + cols] = 0;
    }
  }

  // out (cols rows of x_.bq2) = in (rows x cols, rows of x_.bk2) transposed, the pad zero.
  void transposeBf16(const uint16_t* in, int64_t rows, int64_t cols, uint16_t* out) const {
    for (int64_t c = 0; c < cols; ++c) {
      uint16_t* o = out + c * x_.bq2;
      for (int64_t r = 0; r < rows; ++r) o[r] = in[r * x_.bk2 + c];
      if (rows % 2) o[rows] = 0;
    }
  }

  // s (the scores in base 2) <- P and dp (dP) <- dS for the (query tile, key tile) pair; zero where
  // a key is not visible.
  void probsAndDs(float* w, const float* rows, int64_t bh, int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
    float* s = w + x_.s;
    float* dp = w + x_.dp;
    const bool dense = s_.mask.kind == MaskKind::dense, additive = s_.mask.kind == MaskKind::additive;
    const uint8_t* keep =
        dense ? t_.mask.data() + (s_.mask_layout == MaskLayout::per_head ? bh * Lq_ : 0) * Lkv_ : nullptr;
    const int64_t bias_first = (s_.mask_layout == MaskLayout::per_head ? bh * Lq_ : 0) * Lkv_;
    for (int64_t r = 0; r < nq; ++r) {
      float* srow = s + r * nk;
      float* drow = dp + r * nk;
      const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq_, Lkv_);
      const int64_t c0 = std::clamp(keys.begin - j0, int64_t{0}, nk);
      const int64_t c1 = std::clamp(keys.end - j0, int64_t{0}, nk);
      const float lse2 = rows[x_.lse + i0 + r];
      if (c0 >= c1 || lse2 == kNegInf) {
        fillRow(srow, nk, 0.0f);
        fillRow(drow, nk, 0.0f);
        continue;
      }
      if (dense) applyKeepMask(srow + c0, keep + (i0 + r) * Lkv_ + j0 + c0, c1 - c0);
      // s is in base 2 (scale * log2(e) * q.k), as lse2 is: the bias is too.
      if (additive)
        addToFloat(s_.maskDType(), t_.mask.data(), bias_first + (i0 + r) * Lkv_ + j0 + c0, c1 - c0, srow + c0,
                   std::numbers::log2e_v<float>);
      fillRow(srow, c0, 0.0f);
      fillRow(srow + c1, nk - c1, 0.0f);
      kn_.exp2_shifted(srow + c0, srow + c0, c1 - c0, lse2, 1.0f);
      const float delta = rows[x_.delta + i0 + r];
      for (int64_t j = 0; j < nk; ++j) drow[j] = srow[j] * (drow[j] - delta);
    }
  }

  const WorkloadSpec& s_;
  RunTensors& t_;
  const float* lse_;
  RunContext& ctx_;
  const TileKernels& kn_;
  const BackwardScratch x_;
  const int64_t H_, Hkv_, Lq_, Lkv_, D_, group_, elem_;
  const float scale_;
};

}  // namespace

void planFlashBackward(MemoryPlan& p, const WorkloadSpec& s, int threads) {
  const int step = p.addStep("backward");
  const bool expanded = expandedKv(s);
  const int last = expanded ? p.addStep("backward dK dV sum") : step;
  const BackwardScratch x = BackwardScratch::of(s, activeTileKernels());
  if (expanded) {
    const int64_t bytes = s.batch * s.heads * s.seqKv() * s.headDim() * 4;
    p.add("dK fp32 per query head", bytes, step, last, BufferRole::workspace);
    p.add("dV fp32 per query head", bytes, step, last, BufferRole::workspace);
  }
  const int workers = workersFor(s, threads);
  for (int w = 0; w < workers; ++w) {
    p.add("backward tiles (worker " + std::to_string(w) + ")", x.tile_floats * 4, step, last, BufferRole::workspace);
    p.add("backward query rows (worker " + std::to_string(w) + ")", x.row_floats * 4, step, last,
          BufferRole::workspace);
  }
}

void flashBackward(const WorkloadSpec& s, RunTensors& t, const float* lse, RunContext& ctx, TaskPool& pool) {
  const Backward bwd(s, t, lse, ctx);
  const bool expanded = expandedKv(s);
  Buffer<float> dk_heads, dv_heads;
  if (expanded) {
    const int64_t n = s.batch * s.heads * s.seqKv() * s.headDim();
    dk_heads = Buffer<float>(ctx.allocator(), n, "dK fp32 per query head");
    dv_heads = Buffer<float>(ctx.allocator(), n, "dV fp32 per query head");
  }
  const int workers = workersFor(s, pool.threads());
  std::vector<Buffer<float>> tiles, rows;
  tiles.reserve(static_cast<size_t>(workers));
  rows.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) {
    tiles.emplace_back(ctx.allocator(), bwd.scratch().tile_floats, "backward tiles (worker " + std::to_string(w) + ")");
    rows.emplace_back(ctx.allocator(), bwd.scratch().row_floats,
                      "backward query rows (worker " + std::to_string(w) + ")");
  }
  const int64_t head = s.seqKv() * s.headDim();
  {
    PhaseScope phase(ctx, "backward");
    pool.run(bwd.headTasks(), workers,
             [&](int w, int64_t bh) {
               // fp32 without GQA: the head's own rows of dK and dV, accumulated in place.
               float* dk = expanded ? dk_heads.data() + bh * head : reinterpret_cast<float*>(t.dk.data()) + bh * head;
               float* dv = expanded ? dv_heads.data() + bh * head : reinterpret_cast<float*>(t.dv.data()) + bh * head;
               bwd.headTask(tiles[w].data(), rows[w].data(), bh, dk, dv);
             },
             &ctx);
  }
  if (!expanded) return;
  PhaseScope phase(ctx, "backward dK dV sum");
  pool.run(bwd.sumTasks(), workers,
           [&](int, int64_t task) { bwd.sumTask(dk_heads.data(), dv_heads.data(), task); }, &ctx);
}

}  // namespace attnscope::cpu
