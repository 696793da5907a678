#include "kernels/torch/torch_prediction.h"

#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <algorithm>
#include <climits>
#include <vector>

#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope::torch {
namespace td = torch_dispatch;

namespace {

bool envSet(const char* name, bool when_unset) {
  const char* v = std::getenv(name);
  if (!v || !*v) return when_unset;
  return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0 || std::strcmp(v, "False") == 0);
}

}  // namespace

std::optional<td::TorchVersion> installedVersion(const TorchHello& h, std::string* why) {
  auto version = td::parseTorchVersion(h.torch_version);
  if (!version && why)
    *why = "the dispatch explainer has no rules for torch " + h.torch_version + " (it covers " +
           std::string(td::kTorchVersionRange) + ")";
  return version;
}

std::optional<td::ParsedGpu> detectedGpu(const TorchHello& h, std::string* why) {
  if (!h.cuda_available || h.cuda_devices.empty()) {
    if (why)
      *why = "torch " + h.torch_version + " sees no CUDA device" +
             (h.torch_cuda.empty() ? std::string(" (a CPU-only build)") : h.cuda_reason.empty() ? "" : " (" + h.cuda_reason + ")");
    return std::nullopt;
  }
  const TorchCudaDevice& d = h.cuda_devices[0];
  auto gpu = td::parseGpu(d.capability);
  if (!gpu) {
    if (why) *why = "the dispatch explainer does not know compute capability " + d.capability + " (" + d.name + ")";
    return std::nullopt;
  }
  gpu->name = d.name;
  return gpu;
}

void applyInstalledBuild(const TorchHello& h, td::TorchTarget& t) {
  if (auto c = td::parseCudnnVersion(h.torch_cudnn)) t.cudnn = *c;
  if (int major = std::atoi(h.torch_cuda.c_str()); major > 0) t.cuda_major = major;
}

std::optional<td::TorchTarget> targetFor(const TorchHello& h, bool cuda, std::string* why) {
  auto version = installedVersion(h, why);
  if (!version) return std::nullopt;
  td::TorchTarget t;
  if (!cuda) {
    t = td::defaultTorchTarget(*version, td::TorchDevice::cpu);
    t.cpu_threads = h.threads > 0 ? h.threads : 1;
    td::applyLocalCpu(t);  // the worker runs on this machine: its CPU flash packs for this CPU's AMX
    return t;
  }
  auto gpu = detectedGpu(h, why);
  if (!gpu) return std::nullopt;
  t = td::defaultTorchTarget(*version, td::TorchDevice::cuda, gpu->capability);
  t.gpu_name = gpu->name;
  applyInstalledBuild(h, t);
  // The worker inherits our environment, so these switches are the ones its torch sees.
  t.env_cudnn_sdpa_enabled = envSet("TORCH_CUDNN_SDPA_ENABLED", false);
  t.env_cudnn_sdpa_preferred = envSet("TORCH_CUDNN_SDPA_PREFERRED", true);
  t.env_cudnn_sdpa_deprioritized = envSet("TORCH_CUDNN_SDPA_DEPRIORITIZED", false);
  return t;
}

TorchPrediction predictTorch(const WorkloadSpec& spec, const TorchHello& hello, bool cuda, const std::string& kernel) {
  TorchPrediction p;
  std::string why;
  auto target = targetFor(hello, cuda, &why);
  if (!target) {
    p.plan = MemoryPlan::unknown(why);
    return p;
  }
  target->requires_grad = spec.pass == Pass::train;  // the dispatch rules and the plan see training
  if (kernel == "auto") {
    td::SdpaExplanation x = td::explainSdpa(spec, *target, td::ExplainOptions{false});
    p.hint = x.headline();
    p.plan = x.chosen ? x.memory.plan : MemoryPlan::unknown("the explainer predicts torch raises: " + x.error);
    return p;
  }
  auto k = td::parseSdpaKernel(kernel);
  if (!k) {
    p.plan = MemoryPlan::unknown("no dispatch model for kernel " + kernel);
    return p;
  }
  td::ForcedSdpa f = td::explainForcedSdpa(spec, *target, *k);
  if (f.verdict.usable) {
    p.hint = f.verdict.kernel == *k ? "torch would run " + kernel : f.verdict.via;
    p.plan = f.memory.plan;
  } else {
    p.hint = "torch would refuse " + kernel + ": " + f.verdict.torch_message;
    p.plan = MemoryPlan::unknown("the explainer predicts torch refuses forced " + kernel + " (" + f.verdict.rule + ")");
  }
  return p;
}

namespace {

int findStep(const MemoryPlan& p, const std::string& name) {
  for (int s = 0; s < p.stepCount(); ++s)
    if (p.steps[static_cast<size_t>(s)] == name) return s;
  return -1;
}

}  // namespace

// The train pass of a stack on the CPU flash kernel, one rank, checkpoint none (the worker's
// autograd, in the order torch 2.15's CPU profiler shows it). Forward: per layer qkv (q, k, v
// are views of it, saved by the SDPA node), the flash kernel's forward (its output and
// logsumexp saved), y (saved by the next layer's projection as its input). Backward, per layer
// from the last: out_proj's grad of merge(o) [B, L, H D] (a view the flash backward reads in its
// own layout: no grad_output copy), dw_o, db_o; the flash backward's zeroed grads and scratch;
// when it returns, its saved tensors, qkv and the grad of o die; the split's backward cats the
// three grads into grad_qkv; the projection's backward makes dx (the layer below's incoming
// gradient, dead once that layer's out_proj backward has read it), dw_qkv, db_qkv, and releases
// its input (the layer below's y). The weights' gradients are stolen by AccumulateGrad, not
// copied, and live to the end with G, dx and y.
static MemoryPlan predictTorchLayerTrain(const WorkloadSpec& spec, const MemoryPlan& sdpa) {
  const int fs = findStep(sdpa, "backward: grad_output (made by the caller)");
  const int fb = findStep(sdpa, "flash backward (CPU)");
  if (fs < 0) return MemoryPlan::unknown("the explainer's plan of the rank's SDPA call has no backward");
  if (fb < 0)
    return MemoryPlan::unknown("no prediction for torch's layer backward through the math kernel (measured only; the "
                               "flash kernel's is predicted)");
  const int64_t tp = std::max<int64_t>(1, spec.tp), layers = std::max<int64_t>(1, spec.layers);
  const int64_t elem = bytesPerElement(spec.dtype), B = spec.batch, L = spec.seq_q, D = spec.headDim();
  const int64_t E = spec.width > 0 ? spec.width : spec.heads * D, R = B * L;
  const int64_t hq = spec.heads / tp, hkv = spec.kvHeads() / tp;
  const int64_t rows = (hq + 2 * hkv) * D, hd = hq * D;
  auto file = [](int64_t l, const std::string& name) { return l == 0 ? name : "L" + std::to_string(l + 1) + "." + name; };
  auto prefix = [&](int64_t l) { return layers > 1 ? "L" + std::to_string(l + 1) + "." : std::string(); };
  auto step = [&](int64_t l, const std::string& name) { return layers > 1 ? "L" + std::to_string(l + 1) + " " + name : name; };
  MemoryPlan p;
  p.addStep("inputs");
  auto input = [&](const std::string& name, int64_t bytes, BufferRole role) { p.add(name, bytes, 0, INT_MAX, role); };
  input("x", R * E * elem, BufferRole::input);
  for (int64_t l = 0; l < layers; ++l) {
    input(file(l, "w_qkv"), rows * E * elem, BufferRole::input);
    input(file(l, "b_qkv"), rows * elem, BufferRole::input);
    input(file(l, "w_o"), E * hd * elem, BufferRole::input);
    input(file(l, "b_o"), E * elem, BufferRole::input);
  }
  for (const PlannedBuffer& b : sdpa.buffers)  // the mask tensor the worker loads, as the explainer has it
    if (b.first_step == 0 && b.role == BufferRole::mask) input(b.name, b.bytes, BufferRole::mask);
  input("G", R * E * elem, BufferRole::input);
  // Buffers that die with a layer's SDPA backward, and each layer's y (its output).
  std::vector<std::vector<size_t>> saved(static_cast<size_t>(layers));
  std::vector<size_t> y(static_cast<size_t>(layers));
  for (int64_t l = 0; l < layers; ++l) {
    const std::string pre = prefix(l);
    const int qkv_step = p.addStep(step(l, "qkv_proj"));
    saved[l].push_back(p.buffers.size());
    p.add(pre + "qkv", R * rows * elem, qkv_step, INT_MAX, BufferRole::workspace);
    const int first = p.stepCount();
    for (int s = 1; s < fs; ++s) p.addStep(step(l, "attention: " + sdpa.steps[static_cast<size_t>(s)]));
    for (const PlannedBuffer& b : sdpa.buffers) {
      if (b.first_step == 0 || b.first_step >= fs) continue;
      const bool kept = b.last_step >= fs;  // autograd saved it (or it is the output)
      if (kept) saved[l].push_back(p.buffers.size());
      p.add(pre + b.name, b.bytes, first + b.first_step - 1, kept ? INT_MAX : first + b.last_step - 1, BufferRole::workspace);
    }
    const int out = p.addStep(step(l, "out_proj"));
    y[l] = p.buffers.size();
    p.add(pre + "y", R * E * elem, out, INT_MAX, l + 1 == layers ? BufferRole::output : BufferRole::workspace);
    if (tp > 1) p.addStep(step(l, "comm (all_reduce of y)"));
  }
  size_t incoming = SIZE_MAX;  // the gradient of the layer's y: G for the last layer
  for (int64_t l = layers - 1; l >= 0; --l) {
    const std::string pre = prefix(l);
    const int out = p.addStep(step(l, "out_proj backward"));
    const size_t grad_merged = p.buffers.size();
    p.add(pre + "grad of merge(o)", R * hd * elem, out, INT_MAX, BufferRole::workspace);
    p.add(file(l, "dw_o"), E * hd * elem, out, INT_MAX, BufferRole::output);
    p.add(file(l, "db_o"), E * elem, out, INT_MAX, BufferRole::output);  // rank 0's (the others add no b_o)
    if (incoming != SIZE_MAX) p.buffers[incoming].last_step = out;
    const int first = p.stepCount();
    for (int s = fs + 1; s <= fb; ++s) p.addStep(step(l, "attention backward: " + sdpa.steps[static_cast<size_t>(s)]));
    const int back = p.stepCount() - 1;
    const int cat = p.addStep(step(l, "qkv split backward (cat)"));
    for (const PlannedBuffer& b : sdpa.buffers) {
      if (b.first_step <= fs || b.first_step > fb) continue;  // the forward's, grad_output, AccumulateGrad's copies
      if (b.name.rfind("grad_output copy", 0) == 0) continue;  // the layer's grad is in the kernel's layout already
      const bool grad = b.last_step > fb;                      // grad_q, grad_k, grad_v: read by the split's backward
      p.add(pre + b.name, b.bytes, first + b.first_step - fs - 1, grad ? cat : first + b.last_step - fs - 1, BufferRole::workspace);
    }
    for (size_t i : saved[l]) p.buffers[i].last_step = back;
    p.buffers[grad_merged].last_step = back;
    const size_t grad_qkv = p.buffers.size();
    p.add(pre + "grad_qkv", R * rows * elem, cat, INT_MAX, BufferRole::workspace);
    const int proj = p.addStep(step(l, "qkv_proj backward"));
    p.buffers[grad_qkv].last_step = proj;
    incoming = p.buffers.size();
    p.add(l == 0 ? "dx" : pre + "grad of the input", R * E * elem, proj, INT_MAX, l == 0 ? BufferRole::output : BufferRole::workspace);
    p.add(file(l, "dw_qkv"), rows * E * elem, proj, INT_MAX, BufferRole::output);
    p.add(file(l, "db_qkv"), rows * elem, proj, INT_MAX, BufferRole::output);
    if (l > 0) p.buffers[y[l - 1]].last_step = proj;  // the layer's input, saved by its projection
    if (tp > 1) p.addStep(step(l, "comm (all_reduce of the input's gradient)"));
  }
  for (PlannedBuffer& b : p.buffers) b.last_step = std::min(b.last_step, p.stepCount() - 1);
  return p;
}

MemoryPlan predictTorchLayer(const WorkloadSpec& spec, const TorchHello& hello, bool cuda, const std::string& kernel) {
  const bool train = spec.pass == Pass::train;
  if (cuda) return MemoryPlan::unknown("no prediction for torch's layer on a GPU yet (measured only)");
  const int64_t tp = std::max<int64_t>(1, spec.tp);
  if (tp > 1 && maskIsTensor(spec.mask) && spec.mask_layout == MaskLayout::per_head)
    return MemoryPlan::unknown("no prediction for a per-head mask over tensor-parallel ranks (measured only)");
  if (train && spec.checkpoint != Checkpoint::none)
    return MemoryPlan::unknown("no prediction for torch's layer backward under checkpoint " +
                               std::string(toString(spec.checkpoint)) + " (measured only)");
  if (train && tp > 1 && spec.tp_comm == TpComm::gather)
    return MemoryPlan::unknown("no prediction for torch's layer backward with tp_comm gather (measured only)");
  // The rank's attention: its heads, its share of the worker's threads.
  WorkloadSpec rank = spec;
  rank.kind = WorkloadKind::attention;
  rank.layers = 1;
  rank.checkpoint = Checkpoint::none;
  rank.tp = 1;
  rank.tp_comm = TpComm::allreduce;
  rank.heads = spec.heads / tp;
  rank.kv_heads = spec.kvHeads() / tp;
  rank.width = 0;
  rank.head_dim = spec.headDim();
  if (!spec.scale) rank.scale = spec.effectiveScale();
  TorchHello per_rank = hello;
  per_rank.threads = std::max(1, hello.threads / static_cast<int>(tp));
  const TorchPrediction sdpa = predictTorch(rank, per_rank, cuda, kernel);
  if (!sdpa.plan.known) return sdpa.plan;
  if (train) return predictTorchLayerTrain(spec, sdpa.plan);

  const int64_t elem = bytesPerElement(spec.dtype), B = spec.batch, L = spec.seq_q, D = spec.headDim();
  const int64_t E = spec.width > 0 ? spec.width : spec.heads * D, R = B * L;
  const int64_t rows = (rank.heads + 2 * rank.kv_heads) * D, hd = rank.heads * D;
  const int64_t layers = std::max<int64_t>(1, spec.layers);
  const bool gather = tp > 1 && spec.tp_comm == TpComm::gather;
  // Names as the worker's files (layer 1's weights bare, layer n's L<n>.) and, in a stack, each
  // layer's activations under L<n>. with its steps, as the CPU backends name theirs.
  auto file = [](int64_t l, const std::string& name) { return l == 0 ? name : "L" + std::to_string(l + 1) + "." + name; };
  auto prefix = [&](int64_t l) { return layers > 1 ? "L" + std::to_string(l + 1) + "." : std::string(); };
  auto step = [&](int64_t l, const std::string& name) { return layers > 1 ? "L" + std::to_string(l + 1) + " " + name : name; };
  MemoryPlan p;
  p.addStep("inputs");
  std::vector<size_t> to_end;
  auto whole = [&](const std::string& name, int64_t bytes, BufferRole role) {
    to_end.push_back(p.buffers.size());
    p.add(name, bytes, 0, 0, role);
  };
  whole("x", R * E * elem, BufferRole::input);
  for (int64_t l = 0; l < layers; ++l) {
    whole(file(l, "w_qkv"), rows * E * elem, BufferRole::input);
    whole(file(l, "b_qkv"), rows * elem, BufferRole::input);
    whole(file(l, "w_o"), E * (gather ? spec.heads * D : hd) * elem, BufferRole::input);
    whole(file(l, "b_o"), E * elem, BufferRole::input);
  }
  for (const PlannedBuffer& b : sdpa.plan.buffers)  // the mask tensor the worker loads, as the explainer has it
    if (b.first_step == 0 && b.role == BufferRole::mask) whole(b.name, b.bytes, BufferRole::mask);
  // The worker's loop, h = layer(h): a layer's input (the one before's y) lives until the layer
  // returns and h is rebound; its qkv (q, k, v are views) and the SDPA call's output until then.
  size_t input = SIZE_MAX;  // layer 1's is x, held to the end
  for (int64_t l = 0; l < layers; ++l) {
    const std::string pre = prefix(l);
    const int qkv_step = p.addStep(step(l, "qkv_proj"));
    const size_t qkv = p.buffers.size();
    p.add(pre + "qkv", R * rows * elem, qkv_step, qkv_step, BufferRole::workspace);
    // The SDPA call's steps after its inputs, its buffers but its q, k, v (views of qkv) and mask.
    const int first = p.stepCount();
    for (int s = 1; s < sdpa.plan.stepCount(); ++s)
      p.addStep(step(l, "attention: " + sdpa.plan.steps[static_cast<size_t>(s)]));
    size_t output = SIZE_MAX;
    bool heads_first = false;
    for (const PlannedBuffer& b : sdpa.plan.buffers) {
      if (b.first_step == 0) continue;  // q, k, v, the mask: the layer's own buffers above
      p.add(pre + b.name, b.bytes, first + b.first_step - 1, first + b.last_step - 1, b.role);
      if (b.role == BufferRole::output) {
        output = p.buffers.size() - 1;
        p.buffers.back().role = BufferRole::workspace;  // the layer's output is y
        heads_first = b.name.find("[B,L,H") == std::string::npos;  // flash writes [B,L,H,D], math [B,H,L,D]
      }
    }
    if (output == SIZE_MAX) return MemoryPlan::unknown("the explainer's plan of the rank's SDPA call names no output");
    int64_t merged = heads_first ? R * hd * elem : 0;  // o [B,H,L,D] merged to [B,L,H D]: a copy
    if (gather) {
      const int comm = p.addStep(step(l, "comm (all_gather of the heads)"));
      p.add(pre + "gathered heads", R * spec.heads * D * elem, comm, comm, BufferRole::workspace);
      merged = R * spec.heads * D * elem;  // the gathered heads, [B,H,L,D], merged
    }
    const int out = p.addStep(step(l, "out_proj"));
    if (gather) p.buffers.back().last_step = out;
    if (merged > 0) p.add(pre + "merged heads", merged, out, out, BufferRole::workspace);
    const size_t y = p.buffers.size();
    p.add(pre + "y", R * E * elem, out, out, l + 1 == layers ? BufferRole::output : BufferRole::workspace);
    if (tp > 1 && !gather) p.addStep(step(l, "comm (all_reduce of y)"));
    const int end = p.stepCount() - 1;
    for (size_t b : {qkv, output, y, input})
      if (b != SIZE_MAX) p.buffers[b].last_step = end;
    input = y;
  }
  for (size_t i : to_end) p.buffers[i].last_step = p.stepCount() - 1;
  return p;
}

}  // namespace attnscope::torch
