#include "kernels/cpu/cpu_reference_backend.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include "core/spec/mask.h"
#include "kernels/cpu/cpu_reference_backward.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/row_blocks.h"
#include "kernels/cpu/softmax_math.h"
#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

// The forward's tasks: blocks of query rows of each (batch, head).
RowBlocks queryWork(const WorkloadSpec& s, int threads) {
  return RowBlocks::of(s.batch * s.heads, s.seq_q, s.seqKv(), s.headDim(), threads);
}

// Each worker packs the K (then V) of the head its task needs for the tile kernels.
std::vector<Buffer<float>> packBuffers(TrackingAllocator& alloc, int workers, int64_t floats, const char* what) {
  std::vector<Buffer<float>> b;
  b.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) b.emplace_back(alloc, floats, std::string(what) + " (worker " + std::to_string(w) + ")");
  return b;
}

// Upcasts a 16-bit tensor to fp32 in parallel chunks.
void upcast(TaskPool& pool, const RunContext& ctx, DType dtype, const uint8_t* src, float* dst, int64_t n) {
  constexpr int64_t kChunk = int64_t{1} << 20;
  pool.run((n + kChunk - 1) / kChunk, pool.threads(),
           [&](int, int64_t t) {
             const int64_t first = t * kChunk;
             toFloat(dtype, src, first, std::min(kChunk, n - first), dst + first);
           },
           &ctx);
}

class ReferenceAttention final : public AttentionCore {
 public:
  ReferenceAttention(const WorkloadSpec& spec, RunTensors& t, RunContext& ctx, TaskPool& pool)
      : s_(spec), ctx_(ctx), pool_(pool), t_(t) {}

  // A train pass without checkpointing keeps P from the forward; with checkpoint = attention the
  // forward frees it and the backward first runs the forward again (as torch.utils.checkpoint
  // does, O included), so P is live only during the backward.
  void forward(bool keep) override { probs_ = compute(keep); }
  void backward() override {
    if (s_.checkpoint == Checkpoint::attention) {
      PhaseScope phase(ctx_, "recompute");
      probs_ = compute(true);
    }
    referenceBackward(s_, t_, probs_, ctx_, pool_);
  }

 private:
  // Returns P when keep is set (a train pass's backward reads it), else frees it.
  Buffer<float> compute(bool keep);

  const WorkloadSpec& s_;
  RunContext& ctx_;
  TaskPool& pool_;
  RunTensors& t_;
  Buffer<float> probs_;
};

Buffer<float> ReferenceAttention::compute(bool keep) {
  TrackingAllocator& alloc = ctx_.allocator();
  const int64_t H = s_.heads, Hkv = s_.kvHeads(), Lq = s_.seq_q, Lkv = s_.seqKv(), D = s_.headDim();
  const int64_t group = H / Hkv;
  const bool wide = s_.dtype != DType::fp32;  // 16-bit inputs are upcast for the products
  const TileKernels& kernels = activeTileKernels();
  const RowBlocks work = queryWork(s_, pool_.threads());
  const int64_t rows = work.rows, blocks = work.per_head, tasks = work.tasks;
  const int threads = work.workers;
  // Task t covers rows [i0, i0 + n) of (b, h) = bh.
  struct Rows {
    int64_t bh, b, h, kvh, i0, n;
  };
  auto rowsOf = [&](int64_t t) {
    Rows r;
    r.bh = t / blocks;
    r.b = r.bh / H;
    r.h = r.bh % H;
    r.kvh = r.b * Hkv + r.h / group;
    r.i0 = (t % blocks) * rows;
    r.n = std::min(rows, Lq - r.i0);
    return r;
  };

  Buffer<float> scores, probs;
  {
    PhaseScope phase(ctx_, "scores");
    scores = Buffer<float>(alloc, s_.scoreElements(), "S = scale * Q K^T");
    Buffer<float> q32, k32;
    const float* q = asFloat(s_.dtype, t_.q.data());
    const float* k = asFloat(s_.dtype, t_.k.data());
    if (wide) {
      q32 = Buffer<float>(alloc, s_.qElements(), "q fp32");
      k32 = Buffer<float>(alloc, s_.kvElements(), "k fp32");
      upcast(pool_, ctx_, s_.dtype, t_.q.data(), q32.data(), s_.qElements());
      upcast(pool_, ctx_, s_.dtype, t_.k.data(), k32.data(), s_.kvElements());
      q = q32.data();
      k = k32.data();
    }
    const float scale = static_cast<float>(s_.effectiveScale());
    auto packs = packBuffers(alloc, threads, kernels.packedFloats(D, Lkv), "K^T packed");
    pool_.run(tasks, threads,
              [&](int worker, int64_t t) {
                const Rows r = rowsOf(t);
                float* kp = packs[static_cast<size_t>(worker)].data();
                kernels.pack_b(DType::fp32, k + r.kvh * Lkv * D, D, true, D, Lkv, kp);
                kernels.gemmPacked(r.n, Lkv, D, scale, q + (r.bh * Lq + r.i0) * D, D, kp, 0.0f,
                          scores.data() + (r.bh * Lq + r.i0) * Lkv, Lkv);
              },
              &ctx_);
  }
  {
    PhaseScope phase(ctx_, "softmax");
    probs = Buffer<float>(alloc, s_.scoreElements(), "P = softmax(S)");
    const bool dense = s_.mask.kind == MaskKind::dense, additive = s_.mask.kind == MaskKind::additive;
    const bool per_head = s_.mask_layout == MaskLayout::per_head;
    const DType mask_dtype = s_.maskDType();
    pool_.run(tasks, threads,
              [&](int, int64_t t) {
                const Rows r = rowsOf(t);
                for (int64_t i = r.i0; i < r.i0 + r.n; ++i) {
                  float* srow = scores.data() + (r.bh * Lq + i) * Lkv;
                  float* prow = probs.data() + (r.bh * Lq + i) * Lkv;
                  const KeyRange keys = visibleKeys(s_.mask, i, Lq, Lkv);
                  const int64_t n = std::max<int64_t>(0, keys.end - keys.begin);
                  if (dense && n > 0) {
                    const uint8_t* keep = t_.mask.data() + ((per_head ? r.bh * Lq : 0) + i) * Lkv;
                    applyKeepMask(srow + keys.begin, keep + keys.begin, n);
                  }
                  // S holds scale * QK^T in natural units: the bias adds as it is (-inf drops).
                  if (additive && n > 0)
                    addToFloat(mask_dtype, t_.mask.data(), ((per_head ? r.bh * Lq : 0) + i) * Lkv + keys.begin, n,
                               srow + keys.begin);
                  const float mx = kernels.row_max(srow + keys.begin, n);
                  if (n == 0 || std::isinf(mx)) {  // no visible key: the row of P is zero
                    fillRow(prow, Lkv, 0.0f);
                    continue;
                  }
                  fillRow(prow, keys.begin, 0.0f);
                  fillRow(prow + keys.end, Lkv - keys.end, 0.0f);
                  const float sum = kernels.exp2_shifted(srow + keys.begin, prow + keys.begin, n, mx, std::numbers::log2e_v<float>);
                  kernels.scale_row(prow + keys.begin, n, 1.0f / sum);
                }
              },
              &ctx_);
    scores.reset();
  }
  {
    PhaseScope phase(ctx_, "pv");
    Buffer<float> v32, o32;
    const float* v = asFloat(s_.dtype, t_.v.data());
    float* o = reinterpret_cast<float*>(t_.o.data());
    if (wide) {
      v32 = Buffer<float>(alloc, s_.kvElements(), "v fp32");
      o32 = Buffer<float>(alloc, s_.qElements(), "o fp32");
      upcast(pool_, ctx_, s_.dtype, t_.v.data(), v32.data(), s_.kvElements());
      v = v32.data();
      o = o32.data();
    }
    auto packs = packBuffers(alloc, threads, kernels.packedFloats(Lkv, D), "V packed");
    pool_.run(tasks, threads,
              [&](int worker, int64_t t) {
                const Rows r = rowsOf(t);
                float* orows = o + (r.bh * Lq + r.i0) * D;
                float* vp = packs[static_cast<size_t>(worker)].data();
                kernels.pack_b(DType::fp32, v + r.kvh * Lkv * D, D, false, Lkv, D, vp);
                kernels.gemmPacked(r.n, D, Lkv, 1.0f, probs.data() + (r.bh * Lq + r.i0) * Lkv, Lkv, vp, 0.0f, orows, D);
                if (wide) fromFloat(s_.dtype, orows, r.n * D, t_.o.data(), (r.bh * Lq + r.i0) * D);
              },
              &ctx_);
    if (!keep) probs.reset();
  }
  return probs;
}

}  // namespace

std::string CpuReferenceBackend::description() const {
  return "CPU, materialising: S = QK^T and P = softmax(S) as full [B,H,Lq,Lkv] fp32 tensors (BLAS)";
}

// Appends the forward's steps (scores, softmax, pv; names prefixed) and buffers. P stays to the
// end of the backward when `saved` is given (a train pass reads it there).
static void planForward(MemoryPlan& p, const WorkloadSpec& spec, int threads, const std::string& prefix,
                        std::vector<size_t>* saved) {
  const int scores_step = p.addStep(prefix + "scores");
  const int softmax_step = p.addStep(prefix + "softmax");
  const int pv_step = p.addStep(prefix + "pv");
  const int64_t scores = spec.scoreElements() * 4;
  p.add("S = scale * Q K^T", scores, scores_step, softmax_step, BufferRole::workspace);
  if (saved) saved->push_back(p.buffers.size());
  p.add("P = softmax(S)", scores, softmax_step, pv_step, BufferRole::workspace);
  const TileKernels& kernels = activeTileKernels();
  const int workers = queryWork(spec, threads).workers;
  const int64_t Lkv = spec.seqKv(), D = spec.headDim();
  for (int w = 0; w < workers; ++w) {
    const std::string worker = " (worker " + std::to_string(w) + ")";
    p.add("K^T packed" + worker, kernels.packedFloats(D, Lkv) * 4, scores_step, scores_step, BufferRole::workspace);
    p.add("V packed" + worker, kernels.packedFloats(Lkv, D) * 4, pv_step, pv_step, BufferRole::workspace);
  }
  if (spec.dtype != DType::fp32) {
    p.add("q fp32", spec.qElements() * 4, scores_step, scores_step, BufferRole::workspace);
    p.add("k fp32", spec.kvElements() * 4, scores_step, scores_step, BufferRole::workspace);
    p.add("v fp32", spec.kvElements() * 4, pv_step, pv_step, BufferRole::workspace);
    p.add("o fp32", spec.qElements() * 4, pv_step, pv_step, BufferRole::workspace);
  }
}

std::unique_ptr<AttentionCore> CpuReferenceBackend::makeCore(const WorkloadSpec& spec, RunTensors& t,
                                                             RunContext& ctx) const {
  return std::make_unique<ReferenceAttention>(spec, t, ctx, *pool_);
}

void CpuReferenceBackend::planCoreForward(MemoryPlan& p, const WorkloadSpec& spec, PlanTails& tails, bool keep) const {
  planForward(p, spec, threads(), "", keep ? &tails.to_backward_end : nullptr);
}

// The recomputed forward's steps (prefixed "recompute ") under checkpointing, then the
// backward's; P, kept or recomputed, lives to the backward's last step.
void CpuReferenceBackend::planCoreBackward(MemoryPlan& p, const WorkloadSpec& spec, PlanTails& tails) const {
  if (spec.checkpoint == Checkpoint::attention) planForward(p, spec, threads(), "recompute ", &tails.to_backward_end);
  planReferenceBackward(p, spec, threads());
  PlanTails::close(p, tails.to_backward_end);
}

}  // namespace attnscope::cpu
