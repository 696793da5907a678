#include "kernels/cpu/cpu_flash_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/mask.h"
#include "kernels/cpu/cpu_blas.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/softmax_math.h"

namespace attnscope::cpu {
namespace {

enum Step { kInputs, kAttention };

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One worker's scratch, carved out of a single tracked float buffer. Every part starts on a
// 64-byte boundary.
struct TileLayout {
  int64_t bq = 0, bk = 0, d = 0;
  int64_t q = 0, k = 0, v = 0, s = 0, acc = 0, m = 0, l = 0, floats = 0;

  static int64_t pad(int64_t n) { return (n + 15) / 16 * 16; }
  static TileLayout of(const WorkloadSpec& spec) {
    TileLayout t;
    t.bq = std::min(CpuFlashBackend::kQueryTile, spec.seq_q);
    t.bk = std::min(CpuFlashBackend::kKeyTile, spec.seqKv());
    t.d = spec.headDim();
    const bool wide = spec.dtype != DType::fp32;  // K and V tiles are converted to fp32 first
    int64_t at = 0;
    auto take = [&](int64_t n) {
      const int64_t here = at;
      at += pad(n);
      return here;
    };
    t.q = take(t.bq * t.d);
    t.k = wide ? take(t.bk * t.d) : -1;
    t.v = wide ? take(t.bk * t.d) : -1;
    t.s = take(t.bq * t.bk);
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

class FlashExecution final : public Execution {
 public:
  FlashExecution(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx, TaskPool& pool)
      : s_(spec),
        ctx_(ctx),
        pool_(pool),
        t_(RunTensors::allocate(spec, inputs, ctx.allocator())),
        lse_(ctx.allocator(), spec.batch * spec.heads * spec.seq_q, "lse"),
        tiles_(TileLayout::of(spec)),
        work_(Work::of(spec, pool.threads(), tiles_)) {}

  double run() override;
  void output(std::vector<float>& out) override { outputAsFloat(s_, t_.o, out); }

 private:
  void queryTile(float* scratch, int64_t task) const;

  const WorkloadSpec s_;
  RunContext& ctx_;
  TaskPool& pool_;
  RunTensors t_;
  Buffer<float> lse_;
  TileLayout tiles_;
  Work work_;
};

double FlashExecution::run() {
  const auto start = std::chrono::steady_clock::now();
  setBlasThreads(1);
  PhaseScope phase(ctx_, "attention");
  // Allocated here, on the calling thread, for every worker up front: the peak then does not
  // depend on which threads happened to pick up a task.
  std::vector<Buffer<float>> scratch;
  scratch.reserve(static_cast<size_t>(work_.workers));
  for (int w = 0; w < work_.workers; ++w)
    scratch.emplace_back(ctx_.allocator(), tiles_.floats, "tiles (worker " + std::to_string(w) + ")");
  pool_.run(work_.tasks, work_.workers, [&](int worker, int64_t task) { queryTile(scratch[worker].data(), task); },
            &ctx_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FlashExecution::queryTile(float* scratch, int64_t task) const {
  const int64_t H = s_.heads, Hkv = s_.kvHeads(), Lq = s_.seq_q, Lkv = s_.seqKv(), D = s_.headDim();
  const int64_t BH = s_.batch * H;
  // Last query tiles first: under causal masks they see the most keys, and starting the longest
  // tasks first keeps the threads evenly busy to the end.
  const int64_t bh = task % BH;
  const int64_t i0 = (work_.query_tiles - 1 - task / BH) * tiles_.bq;
  const int64_t nq = std::min(tiles_.bq, Lq - i0);
  const int64_t b = bh / H, h = bh % H;
  const int64_t kv_first = ((b * Hkv + h / (H / Hkv)) * Lkv) * D;  // element index of K/V row 0
  const bool wide = s_.dtype != DType::fp32;
  const bool dense = s_.mask.kind == MaskKind::dense;
  const uint8_t* keep = dense ? t_.mask.data() + (s_.mask_layout == MaskLayout::per_head ? bh * Lq : 0) * Lkv : nullptr;

  float* q = scratch + tiles_.q;
  float* s = scratch + tiles_.s;
  float* acc = scratch + tiles_.acc;
  float* m = scratch + tiles_.m;
  float* l = scratch + tiles_.l;
  // Scores come out in base 2 (scale * log2(e) folded into Q), so the softmax needs only exp2.
  toFloat(s_.dtype, t_.q.data(), (bh * Lq + i0) * D, nq * D, q,
          static_cast<float>(s_.effectiveScale()) * std::numbers::log2e_v<float>);
  fillRow(acc, nq * D, 0.0f);
  fillRow(m, nq, kNegInf);
  fillRow(l, nq, 0.0f);

  // Keys any query of the tile can see; tiles outside are never touched.
  int64_t key_begin = Lkv, key_end = 0;
  for (int64_t r = 0; r < nq; ++r) {
    const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq, Lkv);
    if (keys.begin >= keys.end) continue;
    key_begin = std::min(key_begin, keys.begin);
    key_end = std::max(key_end, keys.end);
  }

  for (int64_t j0 = key_begin; j0 < key_end; j0 += tiles_.bk) {
    ctx_.throwIfCancelled();
    const int64_t nk = std::min(tiles_.bk, key_end - j0);
    const float* k = asFloat(s_.dtype, t_.k.data());
    const float* v = asFloat(s_.dtype, t_.v.data());
    if (wide) {
      toFloat(s_.dtype, t_.k.data(), kv_first + j0 * D, nk * D, scratch + tiles_.k);
      toFloat(s_.dtype, t_.v.data(), kv_first + j0 * D, nk * D, scratch + tiles_.v);
      k = scratch + tiles_.k;
      v = scratch + tiles_.v;
    } else {
      k += kv_first + j0 * D;
      v += kv_first + j0 * D;
    }
    sgemm(true, static_cast<int>(nq), static_cast<int>(nk), static_cast<int>(D), 1.0f, q, static_cast<int>(D), k,
          static_cast<int>(D), 0.0f, s, static_cast<int>(nk));

    // Online softmax: row r of s becomes exp2(s - m_new) over its visible keys and 0 elsewhere;
    // the running sum l and the accumulator are rescaled by exp2(m_old - m_new).
    for (int64_t r = 0; r < nq; ++r) {
      float* srow = s + r * nk;
      const KeyRange keys = visibleKeys(s_.mask, i0 + r, Lq, Lkv);
      const int64_t c0 = std::clamp(keys.begin - j0, int64_t{0}, nk);
      const int64_t c1 = std::clamp(keys.end - j0, int64_t{0}, nk);
      if (c0 < c1 && dense) applyKeepMask(srow + c0, keep + (i0 + r) * Lkv + j0 + c0, c1 - c0);
      const float mx = c0 < c1 ? rowMax(srow + c0, c1 - c0) : kNegInf;
      if (mx == kNegInf) {  // nothing visible for this row in this tile
        fillRow(srow, nk, 0.0f);
        continue;
      }
      const float m_new = std::max(m[r], mx);
      const float alpha = m[r] == kNegInf ? 0.0f : std::exp2(m[r] - m_new);
      fillRow(srow, c0, 0.0f);
      fillRow(srow + c1, nk - c1, 0.0f);
      const float sum = exp2Shifted(srow + c0, srow + c0, c1 - c0, m_new, 1.0f);
      if (alpha != 1.0f) scaleRow(acc + r * D, D, alpha);
      l[r] = l[r] * alpha + sum;
      m[r] = m_new;
    }
    sgemm(false, static_cast<int>(nq), static_cast<int>(D), static_cast<int>(nk), 1.0f, s, static_cast<int>(nk), v,
          static_cast<int>(D), 1.0f, acc, static_cast<int>(D));
  }

  float* lse = lse_.data() + bh * Lq + i0;
  for (int64_t r = 0; r < nq; ++r) {
    if (l[r] > 0.0f) {
      scaleRow(acc + r * D, D, 1.0f / l[r]);
      lse[r] = (m[r] + std::log2(l[r])) * std::numbers::ln2_v<float>;
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

MemoryPlan CpuFlashBackend::plan(const WorkloadSpec& spec) const {
  MemoryPlan p;
  p.addStep("inputs");
  p.addStep("attention");
  planRunTensors(p, spec, kInputs, kAttention);
  p.add("lse", spec.batch * spec.heads * spec.seq_q * 4, kInputs, kAttention, BufferRole::workspace);
  const TileLayout tiles = TileLayout::of(spec);
  const Work work = Work::of(spec, threads(), tiles);
  for (int w = 0; w < work.workers; ++w)
    p.add("tiles (worker " + std::to_string(w) + ")", tiles.floats * 4, kAttention, kAttention, BufferRole::workspace);
  return p;
}

std::unique_ptr<Execution> CpuFlashBackend::prepare(const WorkloadSpec& spec, const HostInputs& inputs,
                                                    RunContext& ctx) {
  PhaseScope phase(ctx, "inputs");
  return std::make_unique<FlashExecution>(spec, inputs, ctx, *pool_);
}

}  // namespace attnscope::cpu
