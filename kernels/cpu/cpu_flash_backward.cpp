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

// One worker's tiles, carved out of one tracked float buffer (64-byte aligned parts). fp32
// products: q, g, o: a query tile in fp32; qp, gp: Q and dO of the tile packed as a right-hand
// side; kt, vt: K^T and V^T of a key tile packed; kk: K of the key tile packed as a right-hand
// side (P^T and dS^T need no copy: gemm_at reads P and dS transposed). bf16 pairs: q16, g16: Q
// and dO rows (even-padded); qpp, gpp: Q and dO packed in pairs as a right-hand side; ktp, vtp,
// kkp: K^T, V^T and K of the key tile in pairs; r16: P or dS rounded (rows even-padded); t16: its
// transpose. Both: s: P; dp: dP then dS; dq: the query tile's dQ accumulator; g, o: for delta.
struct BackwardTiles {
  bool pairs = false;
  int64_t bq = 0, bk = 0, d = 0, d2 = 0, bq2 = 0, bk2 = 0;
  int64_t q = 0, g = 0, o = 0, delta = 0, lse = 0, qp = 0, gp = 0, kt = 0, vt = 0, kk = 0, s = 0, dp = 0,
          dq = 0, q16 = 0, g16 = 0, qpp = 0, gpp = 0, ktp = 0, vtp = 0, kkp = 0, r16 = 0, t16 = 0, floats = 0;

  static BackwardTiles of(const WorkloadSpec& spec, const TileKernels& kn) {
    BackwardTiles x;
    x.pairs = backwardPairs(spec, kn);
    x.bq = std::min(kBackwardQueryTile, spec.seq_q);
    x.bk = std::min(kBackwardKeyTile, spec.seqKv());
    x.d = spec.headDim();
    x.d2 = (x.d + 1) / 2 * 2;
    x.bq2 = (x.bq + 1) / 2 * 2;
    x.bk2 = (x.bk + 1) / 2 * 2;
    int64_t at = 0;
    auto take = [&](int64_t n) {
      const int64_t here = at;
      at += (n + 15) / 16 * 16;
      return here;
    };
    auto halves = [&](int64_t n) { return take((n + 1) / 2); };  // n bf16 values
    x.g = take(x.bq * x.d);
    x.o = take(x.bq * x.d);
    x.delta = take(x.bq);
    x.lse = take(x.bq);
    if (x.pairs) {
      x.q16 = halves(x.bq * x.d2);
      x.g16 = halves(x.bq * x.d2);
      x.qpp = halves(kn.pair_elements(x.bq, x.d));
      x.gpp = halves(kn.pair_elements(x.bq, x.d));
      x.ktp = halves(kn.pair_elements(x.d, x.bk));
      x.vtp = halves(kn.pair_elements(x.d, x.bk));
      x.kkp = halves(kn.pair_elements(x.bk, x.d));
      x.r16 = halves(x.bq * x.bk2);
      x.t16 = halves(x.bk * x.bq2);
    } else {
      x.q = take(x.bq * x.d);
      x.qp = take(kn.packedFloats(x.bq, x.d));
      x.gp = take(kn.packedFloats(x.bq, x.d));
      x.kt = take(kn.packedFloats(x.d, x.bk));
      x.vt = take(kn.packedFloats(x.d, x.bk));
      x.kk = take(kn.packedFloats(x.bk, x.d));
    }
    x.s = take(x.bq * x.bk);
    x.dp = take(x.bq * x.bk);
    x.dq = take(x.bq * x.d);
    x.floats = at;
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

class Backward {
 public:
  Backward(const WorkloadSpec& s, RunTensors& t, const float* lse, RunContext& ctx)
      : s_(s), t_(t), lse_(lse), ctx_(ctx), kn_(activeTileKernels()), x_(BackwardTiles::of(s, kn_)),
        H_(s.heads), Hkv_(s.kvHeads()), Lq_(s.seq_q), Lkv_(s.seqKv()), D_(s.headDim()), group_(H_ / Hkv_),
        elem_(bytesPerElement(s.dtype)), scale_(static_cast<float>(s.effectiveScale())) {}

  const BackwardTiles& tiles() const { return x_; }
  int64_t headTasks() const { return s_.batch * H_; }
  int64_t sumTasks() const { return s_.batch * Hkv_ * keyTiles(); }

  // dQ, dK and dV of one (batch, head), in one pass over its (query tile, key tile) pairs: five
  // tile products per pair (S, dP, dV += P^T dO, dK += dS^T Q, dQ += dS K). The task owns its
  // head's dQ rows (written at each query tile's end) and its dK, dV rows (`dk`, `dv`: the fp32
  // per-head buffers, or the tensors themselves for fp32 without GQA), so no two tasks write the
  // same memory and every sum runs in one fixed order.
  void headTask(float* w, int64_t bh, float* dk, float* dv) const {
    const int64_t kv_first = ((bh / H_) * Hkv_ + (bh % H_) / group_) * Lkv_ * D_;
    fillRow(dk, Lkv_ * D_, 0.0f);
    fillRow(dv, Lkv_ * D_, 0.0f);
    float* dq = w + x_.dq;
    for (int64_t i0 = 0; i0 < Lq_; i0 += x_.bq) {
      const int64_t nq = std::min(x_.bq, Lq_ - i0);
      bool loaded = false;
      for (int64_t j0 = 0; j0 < Lkv_; j0 += x_.bk) {
        ctx_.throwIfCancelled();
        const int64_t nk = std::min(x_.bk, Lkv_ - j0);
        if (!sees(i0, nq, j0, nk)) continue;
        if (!loaded) {
          loadQueries(w, bh, i0, nq);
          fillRow(dq, nq * D_, 0.0f);
          loaded = true;
        }
        if (x_.pairs)
          pairProducts(w, bh, kv_first, i0, nq, j0, nk, dk, dv);
        else
          floatProducts(w, bh, kv_first, i0, nq, j0, nk, dk, dv);
      }
      // A query tile that sees no key has a zero gradient.
      if (!loaded) fillRow(dq, nq * D_, 0.0f);
      fromFloat(s_.dtype, dq, nq * D_, t_.dq.data(), (bh * Lq_ + i0) * D_);
    }
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

  // Whether any query row of the tile sees a key of [j0, j0 + nk) under the structured mask.
  bool sees(int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
    for (int64_t r = 0; r < nq; ++r) {
      const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq_, Lkv_);
      if (keys.begin < std::min(keys.end, j0 + nk) && keys.end > j0) return true;
    }
    return false;
  }

  // The five products of one (query tile, key tile) pair in fp32: K^T, V^T and K of the key tile
  // packed (converted from the dtype), Q and dO as the tile's fp32 rows.
  void floatProducts(float* w, int64_t bh, int64_t kv_first, int64_t i0, int64_t nq, int64_t j0, int64_t nk, float* dk,
                     float* dv) const {
    const uint8_t* k = t_.k.data() + (kv_first + j0 * D_) * elem_;
    const uint8_t* v = t_.v.data() + (kv_first + j0 * D_) * elem_;
    kn_.pack_b(s_.dtype, k, D_, true, D_, nk, w + x_.kt);
    kn_.pack_b(s_.dtype, v, D_, true, D_, nk, w + x_.vt);
    kn_.pack_b(s_.dtype, k, D_, false, nk, D_, w + x_.kk);
    // Scores in base 2, so P = exp2(s - lse2) with the variant's exp2.
    kn_.gemmPacked(nq, nk, D_, scale_ * std::numbers::log2e_v<float>, w + x_.q, D_, w + x_.kt, 0.0f, w + x_.s, nk);
    kn_.gemmPacked(nq, nk, D_, 1.0f, w + x_.g, D_, w + x_.vt, 0.0f, w + x_.dp, nk);
    probsAndDs(w, bh, i0, nq, j0, nk);
    // dV += P^T dO, dK += scale dS^T Q: P and dS are the left-hand sides read transposed in place
    // (gemm_at; until 2026-12 a transposed copy of each, 0.7 ns per element).
    kn_.gemmPackedAt(nk, D_, nq, 1.0f, w + x_.s, nk, w + x_.gp, 1.0f, dv + j0 * D_, D_);
    kn_.gemmPackedAt(nk, D_, nq, scale_, w + x_.dp, nk, w + x_.qp, 1.0f, dk + j0 * D_, D_);
    kn_.gemmPacked(nq, D_, nk, scale_, w + x_.dp, nk, w + x_.kk, 1.0f, dqTile(w), D_);
  }

  // The same five on bf16 pairs: K^T, V^T and K of the key tile packed in pairs as stored; P and
  // dS rounded to bf16 (r16) and transposed (t16) for the products that read them.
  void pairProducts(float* w, int64_t bh, int64_t kv_first, int64_t i0, int64_t nq, int64_t j0, int64_t nk, float* dk,
                    float* dv) const {
    const auto* k = reinterpret_cast<const uint16_t*>(t_.k.data()) + kv_first + j0 * D_;
    const auto* v = reinterpret_cast<const uint16_t*>(t_.v.data()) + kv_first + j0 * D_;
    kn_.pack_pairs(k, D_, true, D_, nk, bf16(w, x_.ktp));
    kn_.pack_pairs(v, D_, true, D_, nk, bf16(w, x_.vtp));
    kn_.pack_pairs(k, D_, false, nk, D_, bf16(w, x_.kkp));
    kn_.gemm_pairs(nq, nk, D_, scale_ * std::numbers::log2e_v<float>, bf16(w, x_.q16), x_.d2, bf16(w, x_.ktp), 0.0f,
                   w + x_.s, nk);
    kn_.gemm_pairs(nq, nk, D_, 1.0f, bf16(w, x_.g16), x_.d2, bf16(w, x_.vtp), 0.0f, w + x_.dp, nk);
    probsAndDs(w, bh, i0, nq, j0, nk);
    uint16_t* r = bf16(w, x_.r16);
    uint16_t* t = bf16(w, x_.t16);
    roundRows(w + x_.s, nq, nk, r);
    transposeBf16(r, nq, nk, t);
    kn_.gemm_pairs(nk, D_, nq, 1.0f, t, x_.bq2, bf16(w, x_.gpp), 1.0f, dv + j0 * D_, D_);
    roundRows(w + x_.dp, nq, nk, r);
    transposeBf16(r, nq, nk, t);
    kn_.gemm_pairs(nk, D_, nq, scale_, t, x_.bq2, bf16(w, x_.qpp), 1.0f, dk + j0 * D_, D_);
    kn_.gemm_pairs(nq, D_, nk, scale_, r, x_.bk2, bf16(w, x_.kkp), 1.0f, dqTile(w), D_);
  }

  float* dqTile(float* w) const { return w + x_.dq; }
  static uint16_t* bf16(float* w, int64_t at) { return reinterpret_cast<uint16_t*>(w + at); }

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

  // The query tile: delta_i = dO_i . O_i and lse in base 2, and Q and dO as the products read
  // them (fp32 rows packed as right-hand sides, or bf16 rows and pairs).
  void loadQueries(float* w, int64_t bh, int64_t i0, int64_t nq) const {
    const int64_t first = (bh * Lq_ + i0) * D_;
    toFloat(s_.dtype, t_.g.data(), first, nq * D_, w + x_.g);
    toFloat(s_.dtype, t_.o.data(), first, nq * D_, w + x_.o);
    for (int64_t r = 0; r < nq; ++r) {
      float delta = 0.0f;
      for (int64_t d = 0; d < D_; ++d) delta += w[x_.g + r * D_ + d] * w[x_.o + r * D_ + d];
      w[x_.delta + r] = delta;
      w[x_.lse + r] = lse_[bh * Lq_ + i0 + r] * std::numbers::log2e_v<float>;
    }
    if (x_.pairs) {
      const auto* q = reinterpret_cast<const uint16_t*>(t_.q.data()) + first;
      const auto* g = reinterpret_cast<const uint16_t*>(t_.g.data()) + first;
      for (auto [src, at] : {std::pair{q, x_.q16}, std::pair{g, x_.g16}}) {
        uint16_t* rows = bf16(w, at);
        for (int64_t r = 0; r < nq; ++r) {
          std::copy(src + r * D_, src + (r + 1) * D_, rows + r * x_.d2);
          if (D_ % 2) rows[r * x_.d2 + D_] = 0;
        }
      }
      kn_.pack_pairs(q, D_, false, nq, D_, bf16(w, x_.qpp));
      kn_.pack_pairs(g, D_, false, nq, D_, bf16(w, x_.gpp));
      return;
    }
    toFloat(s_.dtype, t_.q.data(), first, nq * D_, w + x_.q);
    kn_.pack_b(DType::fp32, w + x_.q, D_, false, nq, D_, w + x_.qp);
    kn_.pack_b(DType::fp32, w + x_.g, D_, false, nq, D_, w + x_.gp);
  }

  // s (the scores in base 2) <- P and dp (dP) <- dS for the (query tile, key tile) pair; zero where
  // a key is not visible.
  void probsAndDs(float* w, int64_t bh, int64_t i0, int64_t nq, int64_t j0, int64_t nk) const {
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
      const float lse2 = w[x_.lse + r];
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
      const float delta = w[x_.delta + r];
      for (int64_t j = 0; j < nk; ++j) drow[j] = srow[j] * (drow[j] - delta);
    }
  }

  const WorkloadSpec& s_;
  RunTensors& t_;
  const float* lse_;
  RunContext& ctx_;
  const TileKernels& kn_;
  const BackwardTiles x_;
  const int64_t H_, Hkv_, Lq_, Lkv_, D_, group_, elem_;
  const float scale_;
};

}  // namespace

void planFlashBackward(MemoryPlan& p, const WorkloadSpec& s, int threads) {
  const int step = p.addStep("backward");
  const bool expanded = expandedKv(s);
  const int last = expanded ? p.addStep("backward dK dV sum") : step;
  const BackwardTiles x = BackwardTiles::of(s, activeTileKernels());
  if (expanded) {
    const int64_t bytes = s.batch * s.heads * s.seqKv() * s.headDim() * 4;
    p.add("dK fp32 per query head", bytes, step, last, BufferRole::workspace);
    p.add("dV fp32 per query head", bytes, step, last, BufferRole::workspace);
  }
  const int workers = workersFor(s, threads);
  for (int w = 0; w < workers; ++w)
    p.add("backward tiles (worker " + std::to_string(w) + ")", x.floats * 4, step, last, BufferRole::workspace);
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
  std::vector<Buffer<float>> tiles;
  tiles.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w)
    tiles.emplace_back(ctx.allocator(), bwd.tiles().floats, "backward tiles (worker " + std::to_string(w) + ")");
  const int64_t head = s.seqKv() * s.headDim();
  {
    PhaseScope phase(ctx, "backward");
    pool.run(bwd.headTasks(), workers,
             [&](int w, int64_t bh) {
               // fp32 without GQA: the head's own rows of dK and dV, accumulated in place.
               float* dk = expanded ? dk_heads.data() + bh * head : reinterpret_cast<float*>(t.dk.data()) + bh * head;
               float* dv = expanded ? dv_heads.data() + bh * head : reinterpret_cast<float*>(t.dv.data()) + bh * head;
               bwd.headTask(tiles[w].data(), bh, dk, dv);
             },
             &ctx);
  }
  if (!expanded) return;
  PhaseScope phase(ctx, "backward dK dV sum");
  pool.run(bwd.sumTasks(), workers,
           [&](int, int64_t task) { bwd.sumTask(dk_heads.data(), dv_heads.data(), task); }, &ctx);
}

}  // namespace attnscope::cpu
