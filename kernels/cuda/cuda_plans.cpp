#include "kernels/cuda/cuda_plans.h"

#include <algorithm>
#include <string>

namespace attnscope::cuda {

int64_t chooseChunkRows(const WorkloadSpec& s, int64_t requested_rows, int64_t score_budget_bytes) {
  const int64_t lq = std::max<int64_t>(1, s.seq_q);
  if (requested_rows > 0) return std::min(requested_rows, lq);
  const int64_t row_bytes = s.batch * s.heads * s.seqKv() * bytesPerElement(s.dtype);
  const int64_t max_rows = std::clamp<int64_t>(row_bytes > 0 ? score_budget_bytes / row_bytes : lq, 1, lq);
  const int64_t chunks = (lq + max_rows - 1) / max_rows;
  return (lq + chunks - 1) / chunks;
}

MaterialisingSizes materialisingSizes(const WorkloadSpec& s, int64_t chunk_rows) {
  MaterialisingSizes z;
  const int64_t eb = bytesPerElement(s.dtype);
  z.chunk_rows = std::clamp<int64_t>(chunk_rows, 1, std::max<int64_t>(1, s.seq_q));
  z.chunks = (s.seq_q + z.chunk_rows - 1) / z.chunk_rows;
  z.q = z.o = s.qElements() * eb;
  z.k = z.v = s.kvElements() * eb;
  const int64_t chunk_scores = s.batch * s.heads * z.chunk_rows * s.seqKv();
  z.scores = z.probs = chunk_scores * eb;
  if (s.mask.kind == MaskKind::dense) {
    z.mask = s.maskBytes();
    const int64_t planes = s.mask_layout == MaskLayout::per_head ? s.batch * s.heads : 1;
    z.bias = planes * z.chunk_rows * s.seqKv() * eb;
  }
  return z;
}

FlashSizes flashSizes(const WorkloadSpec& s) {
  FlashSizes f;
  const int64_t eb = bytesPerElement(s.dtype);
  f.q = f.o = s.qElements() * eb;
  f.k = f.v = s.kvElements() * eb;
  if (s.mask.kind == MaskKind::dense) f.mask = s.maskBytes();
  f.lse = s.batch * s.heads * s.seq_q * 4;
  return f;
}

TrainSizes trainSizes(const WorkloadSpec& s) {
  TrainSizes t;
  const int64_t eb = bytesPerElement(s.dtype);
  t.g = t.dq = s.qElements() * eb;
  t.dk = t.dv = s.kvElements() * eb;
  t.ds = s.scoreElements() * eb;
  return t;
}

namespace {

// g, dq, dk, dv live over [first, last], under the names the executions allocate them with.
void addTrainTensors(MemoryPlan& p, const WorkloadSpec& s, int first, int last) {
  const TrainSizes t = trainSizes(s);
  p.add("g", t.g, first, last, BufferRole::input);
  p.add("dq", t.dq, first, last, BufferRole::output);
  p.add("dk", t.dk, first, last, BufferRole::output);
  p.add("dv", t.dv, first, last, BufferRole::output);
}

}  // namespace

MemoryPlan planMaterialising(const WorkloadSpec& s, int64_t chunk_rows) {
  const MaterialisingSizes z = materialisingSizes(s, chunk_rows);
  MemoryPlan p;
  const int in = p.addStep("inputs");
  const int sc = p.addStep("scores");
  const int sm = p.addStep("softmax");
  const int out = p.addStep("pv");
  const bool chunked = z.chunks > 1 || z.chunk_rows < s.seq_q;
  const std::string per = chunked ? " (chunk of " + std::to_string(z.chunk_rows) + " rows)" : "";
  p.add("q", z.q, in, out, BufferRole::input);
  p.add("k", z.k, in, out, BufferRole::input);
  p.add("v", z.v, in, out, BufferRole::input);
  if (z.mask > 0) p.add("mask", z.mask, in, out, BufferRole::mask);
  p.add("o", z.o, in, out, BufferRole::output);
  p.add("cublas workspace", z.workspace, in, out, BufferRole::library);
  if (z.bias > 0) p.add("additive mask" + per, z.bias, sc, out, BufferRole::workspace);
  p.add("scores S" + per, z.scores, sc, sm, BufferRole::workspace);
  p.add("probs P" + per, z.probs, sm, out, BufferRole::workspace);
  return p;
}

MemoryPlan planFlash(const WorkloadSpec& s) {
  const FlashSizes f = flashSizes(s);
  MemoryPlan p;
  const int in = p.addStep("inputs");
  const int at = p.addStep("attention");
  p.add("q", f.q, in, at, BufferRole::input);
  p.add("k", f.k, in, at, BufferRole::input);
  p.add("v", f.v, in, at, BufferRole::input);
  if (f.mask > 0) p.add("mask", f.mask, in, at, BufferRole::mask);
  p.add("o", f.o, in, at, BufferRole::output);
  p.add("log-sum-exp", f.lse, in, at, BufferRole::workspace);
  return p;
}

MemoryPlan planMathTrain(const WorkloadSpec& s) {
  const MaterialisingSizes z = materialisingSizes(s, s.seq_q);
  const bool checkpoint = s.checkpoint == Checkpoint::attention;
  MemoryPlan p;
  const int in = p.addStep("inputs");
  // One forward's buffers: the additive mask and S over the forward, P from the softmax to p_last.
  auto forward = [&](const std::string& prefix, int p_last) {
    const int sc = p.addStep(prefix + "scores");
    const int sm = p.addStep(prefix + "softmax");
    const int out = p.addStep(prefix + "pv");
    if (z.bias > 0) p.add("additive mask", z.bias, sc, out, BufferRole::workspace);
    p.add("scores S", z.scores, sc, sm, BufferRole::workspace);
    p.add("probs P", z.probs, sm, p_last < 0 ? out : p_last, BufferRole::workspace);
  };
  const int forward_steps = 3 * (checkpoint ? 2 : 1);
  const int ds = 1 + forward_steps, last = ds + 2;
  p.add("q", z.q, in, last, BufferRole::input);
  p.add("k", z.k, in, last, BufferRole::input);
  p.add("v", z.v, in, last, BufferRole::input);
  if (z.mask > 0) p.add("mask", z.mask, in, last, BufferRole::mask);
  p.add("o", z.o, in, last, BufferRole::output);
  p.add("cublas workspace", z.workspace, in, last, BufferRole::library);
  addTrainTensors(p, s, in, last);
  forward("", checkpoint ? -1 : last);
  if (checkpoint) forward("recompute ", last);
  p.addStep("backward dS");
  p.addStep("backward dQ");
  p.addStep("backward dK dV");
  p.add(kDsBufferName, trainSizes(s).ds, ds, last, BufferRole::workspace);
  return p;
}

MemoryPlan planFlashTrain(const WorkloadSpec& s) {
  const FlashSizes f = flashSizes(s);
  MemoryPlan p;
  const int in = p.addStep("inputs");
  p.addStep("attention");
  if (s.checkpoint == Checkpoint::attention) p.addStep("recompute attention");
  p.addStep("backward dK dV");
  const int last = p.addStep("backward dQ");
  p.add("q", f.q, in, last, BufferRole::input);
  p.add("k", f.k, in, last, BufferRole::input);
  p.add("v", f.v, in, last, BufferRole::input);
  if (f.mask > 0) p.add("mask", f.mask, in, last, BufferRole::mask);
  p.add("o", f.o, in, last, BufferRole::output);
  p.add("log-sum-exp", f.lse, in, last, BufferRole::workspace);
  addTrainTensors(p, s, in, last);
  return p;
}

}  // namespace attnscope::cuda
