#include "kernels/cpu/cpu_flash_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/spec/mask.h"
#include "kernels/cpu/cpu_flash_backward.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/flash_profile.h"
#include "kernels/cpu/softmax_math.h"
#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// An fp32 V whose rows are whole kernel strips is used in place; anything else is packed.
bool packsV(const WorkloadSpec& spec, const TileKernels& kernels) {
  return spec.dtype != DType::fp32 || kernels.needsPacking(spec.headDim());
}

// bf16 workloads on a variant with bf16 products (avx512_bf16) keep Q, K, V and P in bf16 and
// accumulate in fp32, as PyTorch's CPU flash does; the scale is then applied to the scores in
// the softmax, which needs it positive to keep the row maximum where it is.
bool usesPairs(const WorkloadSpec& spec, const TileKernels& kernels) {
  return kernels.gemm_pairs != nullptr && spec.dtype == DType::bf16 && spec.effectiveScale() > 0;
}

// One worker's scratch, carved out of a single tracked float buffer. Every part starts on a
// 64-byte boundary. K and V tiles are packed (converted to fp32 and laid out in the kernel
// variant's strips, or kept in bf16 pairs) once per key tile and reused by every query row.
struct TileLayout {
  bool pairs = false;
  int64_t bq = 0, bs = 0, bk = 0, d = 0;  // query rows per task, per score block; key rows
  int64_t d2 = 0, bk2 = 0;  // bf16 rows padded to an even length (pairs only)
  int64_t q = 0, k = 0, v = 0, p = -1, s = 0, acc = 0, m = 0, l = 0, floats = 0;

  static int64_t pad(int64_t n) { return (n + 15) / 16 * 16; }
  static int64_t halves(int64_t n) { return (n + 1) / 2; }  // floats holding n bf16 values
  static TileLayout of(const WorkloadSpec& spec, const TileKernels& kernels, int threads) {
    TileLayout t;
    t.pairs = usesPairs(spec, kernels);
    // Score blocks a whole number of micro-kernel rows (126 for avx2's 6-row kernel), so no
    // product runs a narrow tail kernel except in a task's last block.
    t.bs = std::min(std::max<int64_t>(CpuFlashBackend::kScoreRows / kernels.mr, 1) * kernels.mr, spec.seq_q);
    // Up to kBlocksPerTask score blocks per task (one packing of each key tile serves them all)
    // while the task's Q and accumulator stay within kTaskRowFloats each (L2), and fewer where
    // that would leave under four tasks per thread to balance.
    const int64_t d = spec.headDim();
    int64_t blocks = CpuFlashBackend::kBlocksPerTask;
    while (blocks > 1 && blocks * t.bs * d > CpuFlashBackend::kTaskRowFloats) blocks /= 2;
    const auto tasks = [&](int64_t g) { return spec.batch * spec.heads * ((spec.seq_q + g * t.bs - 1) / (g * t.bs)); };
    while (blocks > 1 && tasks(blocks) < 4 * int64_t{threads}) blocks /= 2;
    t.bq = std::min(blocks * t.bs, spec.seq_q);
    t.bk = std::min(CpuFlashBackend::kKeyTile, spec.seqKv());
    t.d = spec.headDim();
    t.d2 = (t.d + 1) / 2 * 2;
    t.bk2 = (t.bk + 1) / 2 * 2;
    int64_t at = 0;
    auto take = [&](int64_t n) {
      const int64_t here = at;
      at += pad(n);
      return here;
    };
    if (t.pairs) {
      t.q = take(halves(t.bq * t.d2));
      t.k = take(halves(kernels.pair_elements(t.d, t.bk)));  // K^T: d x bk
      t.v = take(halves(kernels.pair_elements(t.bk, t.d)));  // V: bk x d
      t.p = take(halves(t.bs * t.bk2));                      // P in bf16
    } else {
      t.q = take(t.bq * t.d);
      t.k = take(kernels.packedFloats(t.d, t.bk));
      t.v = packsV(spec, kernels) ? take(kernels.packedFloats(t.bk, t.d)) : -1;
    }
    t.s = take(t.bs * t.bk);
    t.acc = take(t.bq * t.d);
    t.m = take(t.bq);
    t.l = take(t.bq);
    t.floats = at;
    return t;
  }
};

struct Work {
  int64_t query_tiles = 0;
  int64_t tasks = 0;
  int workers = 0;
  static Work of(const WorkloadSpec& spec, int threads, const TileLayout& tiles) {
    Work w;
    w.query_tiles = (spec.seq_q + tiles.bq - 1) / tiles.bq;
    w.tasks = spec.batch * spec.heads * w.query_tiles;
    w.workers = static_cast<int>(std::min<int64_t>(threads, w.tasks));
    return w;
  }
};

class FlashAttention final : public AttentionCore {
 public:
  FlashAttention(const WorkloadSpec& spec, RunTensors& t, RunContext& ctx, TaskPool& pool)
      : s_(spec),
        ctx_(ctx),
        pool_(pool),
        t_(t),
        lse_(ctx.allocator(), spec.batch * spec.heads * spec.seq_q, "lse"),
        kernels_(activeTileKernels()),
        tiles_(TileLayout::of(spec, kernels_, pool.threads())),
        work_(Work::of(spec, pool.threads(), tiles_)) {}

  void forward(bool /*keep*/) override;  // O and lse are all it keeps, always
  // The forward keeps O and lse, all the backward needs. checkpoint = attention recomputes them
  // before the backward (as torch.utils.checkpoint would), which here costs a forward and saves
  // nothing: lse is [B, H, Lq] and O is the output.
  void backward() override {
    if (s_.checkpoint == Checkpoint::attention) {
      PhaseScope phase(ctx_, "recompute");
      forward(true);
    }
    flashBackward(s_, t_, lse_.data(), ctx_, pool_);
  }

 private:
  void queryTile(float* scratch, int64_t task) const;

  const WorkloadSpec& s_;
  RunContext& ctx_;
  TaskPool& pool_;
  RunTensors& t_;
  Buffer<float> lse_;
  const TileKernels& kernels_;
  TileLayout tiles_;
  Work work_;
};

void FlashAttention::forward(bool) {
  PhaseScope phase(ctx_, "attention");
  // Allocated here, on the calling thread, for every worker up front: the peak then does not
  // depend on which threads happened to pick up a task.
  std::vector<Buffer<float>> scratch;
  scratch.reserve(static_cast<size_t>(work_.workers));
  for (int w = 0; w < work_.workers; ++w)
    scratch.emplace_back(ctx_.allocator(), tiles_.floats, "tiles (worker " + std::to_string(w) + ")");
  pool_.run(work_.tasks, work_.workers, [&](int worker, int64_t task) { queryTile(scratch[worker].data(), task); },
            &ctx_);
}

void FlashAttention::queryTile(float* scratch, int64_t task) const {
  const int64_t H = s_.heads, Hkv = s_.kvHeads(), Lq = s_.seq_q, Lkv = s_.seqKv(), D = s_.headDim();
  // Head by head, so that the workers share one head's K and V in the caches; within a head,
  // last query tiles first: under causal masks they see the most keys, and the short tasks
  // left at the end keep the threads evenly busy.
  const int64_t bh = task / work_.query_tiles;
  const int64_t i0 = (work_.query_tiles - 1 - task % work_.query_tiles) * tiles_.bq;
  const int64_t nq = std::min(tiles_.bq, Lq - i0);
  const int64_t b = bh / H, h = bh % H;
  const int64_t kv_first = ((b * Hkv + h / (H / Hkv)) * Lkv) * D;  // element index of K/V row 0
  const int64_t elem = bytesPerElement(s_.dtype);
  const bool dense = s_.mask.kind == MaskKind::dense, additive = s_.mask.kind == MaskKind::additive;
  const uint8_t* keep = dense ? t_.mask.data() + (s_.mask_layout == MaskLayout::per_head ? bh * Lq : 0) * Lkv : nullptr;
  // An additive mask's plane: element index of its row 0 in the mask buffer.
  const int64_t bias_first = (s_.mask_layout == MaskLayout::per_head ? bh * Lq : 0) * Lkv;
  const DType mask_dtype = s_.maskDType();

  float* q = scratch + tiles_.q;
  float* s = scratch + tiles_.s;
  float* acc = scratch + tiles_.acc;
  float* m = scratch + tiles_.m;
  float* l = scratch + tiles_.l;
  float* kp = scratch + tiles_.k;
  float* vp = tiles_.v >= 0 ? scratch + tiles_.v : nullptr;
  const bool pairs = tiles_.pairs;
  auto* qb = reinterpret_cast<uint16_t*>(q);
  auto* kb = reinterpret_cast<uint16_t*>(kp);
  auto* vb = reinterpret_cast<uint16_t*>(vp);
  auto* pb = pairs ? reinterpret_cast<uint16_t*>(scratch + tiles_.p) : nullptr;
  const uint16_t* k16 = reinterpret_cast<const uint16_t*>(t_.k.data()) + kv_first;
  const uint16_t* v16 = reinterpret_cast<const uint16_t*>(t_.v.data()) + kv_first;
  // The softmax works in base 2: score_k * s = scale * log2(e) * (q . k). In fp32, that factor is
  // folded into Q (score_k = 1); bf16 pairs keep Q as stored and scale the scores instead.
  const float base2 = static_cast<float>(s_.effectiveScale()) * std::numbers::log2e_v<float>;
  const float score_k = pairs ? base2 : 1.0f;
  // The scores' unit: the bias (natural units) is scaled so that (s + bias_k * bias) * score_k is
  // base2 * q.k + log2(e) * bias. usesPairs holds the scale positive, so -inf stays -inf.
  const float bias_k = pairs ? 1.0f / static_cast<float>(s_.effectiveScale()) : std::numbers::log2e_v<float>;
  if (pairs) {
    const uint16_t* q16 = reinterpret_cast<const uint16_t*>(t_.q.data()) + (bh * Lq + i0) * D;
    for (int64_t r = 0; r < nq; ++r) {
      std::copy(q16 + r * D, q16 + (r + 1) * D, qb + r * tiles_.d2);
      if (tiles_.d2 > D) qb[r * tiles_.d2 + D] = 0;
    }
  } else {
    toFloat(s_.dtype, t_.q.data(), (bh * Lq + i0) * D, nq * D, q, base2);
  }
  fillRow(acc, nq * D, 0.0f);
  fillRow(m, nq, kNegInf);
  fillRow(l, nq, 0.0f);

  // Keys any query of the task can see; key tiles outside are never touched. Each block of
  // kScoreRows queries has its own range, so a causal mask skips the blocks a key tile cannot reach.
  const int64_t blocks = (nq + tiles_.bs - 1) / tiles_.bs;
  KeyRange block_keys[CpuFlashBackend::kBlocksPerTask];
  int64_t key_begin = Lkv, key_end = 0;
  for (int64_t g = 0; g < blocks; ++g) {
    KeyRange& range = block_keys[g];
    range = {Lkv, 0};
    for (int64_t r = g * tiles_.bs; r < std::min(nq, (g + 1) * tiles_.bs); ++r) {
      const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq, Lkv);
      if (keys.begin >= keys.end) continue;
      range.begin = std::min(range.begin, keys.begin);
      range.end = std::max(range.end, keys.end);
    }
    key_begin = std::min(key_begin, range.begin);
    key_end = std::max(key_end, range.end);
  }

  using Clock = std::chrono::steady_clock;
  const bool profile = flashProfileEnabled();
  long long ns[4] = {0, 0, 0, 0};  // pack, scores, softmax, output
  Clock::time_point t0;
  auto lap = [&](int part) {
    if (!profile) return;
    const Clock::time_point now = Clock::now();
    ns[part] += std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0).count();
    t0 = now;
  };
  if (profile) t0 = Clock::now();

  for (int64_t j0 = key_begin; j0 < key_end; j0 += tiles_.bk) {
    ctx_.throwIfCancelled();
    const int64_t nk = std::min(tiles_.bk, key_end - j0);
    // K^T and V of this key tile, packed for the kernels once and used by every block of queries.
    if (pairs) {
      kernels_.pack_pairs(k16 + j0 * D, D, true, D, nk, kb);
      kernels_.pack_pairs(v16 + j0 * D, D, false, nk, D, vb);
    } else {
      kernels_.pack_b(s_.dtype, t_.k.data() + (kv_first + j0 * D) * elem, D, true, D, nk, kp);
      if (vp) kernels_.pack_b(s_.dtype, t_.v.data() + (kv_first + j0 * D) * elem, D, false, nk, D, vp);
    }
    lap(0);
    for (int64_t g = 0; g < blocks; ++g) {
      if (block_keys[g].begin >= j0 + nk || block_keys[g].end <= j0) continue;
      const int64_t r0 = g * tiles_.bs, nr = std::min(tiles_.bs, nq - r0);
      float* acc_g = acc + r0 * D;
      if (pairs)
        kernels_.gemm_pairs(nr, nk, D, 1.0f, qb + r0 * tiles_.d2, tiles_.d2, kb, 0.0f, s, nk);
      else
        kernels_.gemmPacked(nr, nk, D, 1.0f, q + r0 * D, D, kp, 0.0f, s, nk);
      lap(1);

      // Online softmax: row r of s becomes exp2(s - m_new) over its visible keys and 0 elsewhere;
      // the running sum l and the accumulator are rescaled by exp2(m_old - m_new).
      for (int64_t rr = 0; rr < nr; ++rr) {
        const int64_t r = r0 + rr;
        float* srow = s + rr * nk;
        const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq, Lkv);
        const int64_t c0 = std::clamp(keys.begin - j0, int64_t{0}, nk);
        const int64_t c1 = std::clamp(keys.end - j0, int64_t{0}, nk);
        if (c0 < c1 && dense) applyKeepMask(srow + c0, keep + (i0 + r) * Lkv + j0 + c0, c1 - c0);
        if (c0 < c1 && additive)
          addToFloat(mask_dtype, t_.mask.data(), bias_first + (i0 + r) * Lkv + j0 + c0, c1 - c0, srow + c0, bias_k);
        const float mx = c0 < c1 ? kernels_.row_max(srow + c0, c1 - c0) : kNegInf;
        if (mx == kNegInf) {  // nothing visible for this row in this tile
          fillRow(srow, nk, 0.0f);
          continue;
        }
        const float m_new = std::max(m[r], mx);
        const float alpha = m[r] == kNegInf ? 0.0f : std::exp2((m[r] - m_new) * score_k);
        fillRow(srow, c0, 0.0f);
        fillRow(srow + c1, nk - c1, 0.0f);
        const float sum = kernels_.exp2_shifted(srow + c0, srow + c0, c1 - c0, m_new, score_k);
        if (alpha != 1.0f) kernels_.scale_row(acc + r * D, D, alpha);
        l[r] = l[r] * alpha + sum;
        m[r] = m_new;
      }
      lap(2);
      if (pairs) {
        for (int64_t rr = 0; rr < nr; ++rr) {
          kernels_.round_bf16(s + rr * nk, nk, pb + rr * tiles_.bk2);
          if (nk % 2) pb[rr * tiles_.bk2 + nk] = 0;
        }
        kernels_.gemm_pairs(nr, D, nk, 1.0f, pb, tiles_.bk2, vb, 1.0f, acc_g, D);
      } else if (vp) {
        kernels_.gemmPacked(nr, D, nk, 1.0f, s, nk, vp, 1.0f, acc_g, D);
      } else {
        kernels_.gemmRows(nr, D, nk, 1.0f, s, nk, reinterpret_cast<const float*>(t_.v.data()) + kv_first + j0 * D, D,
                          1.0f, acc_g, D);
      }
      lap(3);
    }
  }
  if (profile) addFlashProfile(ns[0], ns[1], ns[2], ns[3]);

  float* lse = lse_.data() + bh * Lq + i0;
  for (int64_t r = 0; r < nq; ++r) {
    if (l[r] > 0.0f) {
      kernels_.scale_row(acc + r * D, D, 1.0f / l[r]);
      lse[r] = (m[r] * score_k + std::log2(l[r])) * std::numbers::ln2_v<float>;
    } else {  // no visible key: the output row is zero
      fillRow(acc + r * D, D, 0.0f);
      lse[r] = kNegInf;
    }
  }
  fromFloat(s_.dtype, acc, nq * D, t_.o.data(), (bh * Lq + i0) * D);
}

}  // namespace

std::string CpuFlashBackend::description() const {
  return "CPU, tiled with an online softmax (FlashAttention-2 style): memory linear in sequence length";
}

std::unique_ptr<AttentionCore> CpuFlashBackend::makeCore(const WorkloadSpec& spec, RunTensors& t,
                                                         RunContext& ctx) const {
  return std::make_unique<FlashAttention>(spec, t, ctx, *pool_);
}

static void planTiles(MemoryPlan& p, const WorkloadSpec& spec, int threads, int step) {
  const TileLayout tiles = TileLayout::of(spec, activeTileKernels(), threads);
  const Work work = Work::of(spec, threads, tiles);
  for (int w = 0; w < work.workers; ++w)
    p.add("tiles (worker " + std::to_string(w) + ")", tiles.floats * 4, step, step, BufferRole::workspace);
}

// lse is allocated with the core (at prepare) and lives as long as the execution.
void CpuFlashBackend::planCoreState(MemoryPlan& p, const WorkloadSpec& spec, PlanTails& tails) const {
  tails.to_run_end.push_back(p.buffers.size());
  p.add("lse", spec.batch * spec.heads * spec.seq_q * 4, 0, 0, BufferRole::workspace);
}

void CpuFlashBackend::planCoreForward(MemoryPlan& p, const WorkloadSpec& spec, PlanTails&, bool) const {
  planTiles(p, spec, threads(), p.addStep("attention"));
}

void CpuFlashBackend::planCoreBackward(MemoryPlan& p, const WorkloadSpec& spec, PlanTails&) const {
  if (spec.checkpoint == Checkpoint::attention) planTiles(p, spec, threads(), p.addStep("recompute attention"));
  planFlashBackward(p, spec, threads());
}

}  // namespace attnscope::cpu
