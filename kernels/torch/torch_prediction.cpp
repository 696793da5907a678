#include "kernels/torch/torch_prediction.h"

#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <algorithm>

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

MemoryPlan predictTorchLayer(const WorkloadSpec& spec, const TorchHello& hello, bool cuda, const std::string& kernel) {
  if (spec.pass == Pass::train) return MemoryPlan::unknown("no prediction for torch's layer backward (measured only)");
  if (spec.layers > 1) return MemoryPlan::unknown("no prediction for a stack of torch layers (measured only)");
  if (cuda) return MemoryPlan::unknown("no prediction for torch's layer on a GPU yet (measured only)");
  const int64_t tp = std::max<int64_t>(1, spec.tp);
  if (tp > 1 && maskIsTensor(spec.mask) && spec.mask_layout == MaskLayout::per_head)
    return MemoryPlan::unknown("no prediction for a per-head mask over tensor-parallel ranks (measured only)");
  // The rank's attention: its heads, its share of the worker's threads.
  WorkloadSpec rank = spec;
  rank.kind = WorkloadKind::attention;
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

  const int64_t elem = bytesPerElement(spec.dtype), B = spec.batch, L = spec.seq_q, D = spec.headDim();
  const int64_t E = spec.width > 0 ? spec.width : spec.heads * D, R = B * L;
  const int64_t rows = (rank.heads + 2 * rank.kv_heads) * D, hd = rank.heads * D;
  const bool gather = tp > 1 && spec.tp_comm == TpComm::gather;
  MemoryPlan p;
  p.addStep("inputs");
  std::vector<size_t> to_end;
  auto whole = [&](const std::string& name, int64_t bytes, BufferRole role) {
    to_end.push_back(p.buffers.size());
    p.add(name, bytes, 0, 0, role);
  };
  whole("x", R * E * elem, BufferRole::input);
  whole("w_qkv", rows * E * elem, BufferRole::input);
  whole("b_qkv", rows * elem, BufferRole::input);
  whole("w_o", E * (gather ? spec.heads * D : hd) * elem, BufferRole::input);
  whole("b_o", E * elem, BufferRole::input);
  if (maskIsTensor(spec.mask)) whole("mask", spec.maskBytes(), BufferRole::mask);
  const int qkv_step = p.addStep("qkv_proj");
  const size_t qkv = p.buffers.size();
  p.add("qkv", R * rows * elem, qkv_step, qkv_step, BufferRole::workspace);
  // The SDPA call's steps after its inputs, its buffers but its q, k, v (views of qkv) and mask.
  const int first = p.stepCount();
  for (int s = 1; s < sdpa.plan.stepCount(); ++s) p.addStep("attention: " + sdpa.plan.steps[static_cast<size_t>(s)]);
  size_t output = SIZE_MAX;
  bool heads_first = false;
  for (const PlannedBuffer& b : sdpa.plan.buffers) {
    if (b.first_step == 0) continue;  // q, k, v, the mask: the layer's own buffers above
    p.add(b.name, b.bytes, first + b.first_step - 1, first + b.last_step - 1, b.role);
    if (b.role == BufferRole::output) {
      output = p.buffers.size() - 1;
      heads_first = b.name.find("[B,L,H") == std::string::npos;  // flash writes [B,L,H,D], math [B,H,L,D]
    }
  }
  if (output == SIZE_MAX) return MemoryPlan::unknown("the explainer's plan of the rank's SDPA call names no output");
  // q, k, v are views of qkv, held by the layer's call to its end.
  to_end.push_back(qkv);
  int64_t merged = heads_first ? R * hd * elem : 0;  // o [B,H,L,D] merged to [B,L,H D]: a copy
  if (gather) {
    const int comm = p.addStep("comm (all_gather of the heads)");
    p.add("gathered heads", R * spec.heads * D * elem, comm, comm, BufferRole::workspace);
    merged = R * spec.heads * D * elem;  // the gathered heads, [B,H,L,D], merged
  }
  const int out = p.addStep("out_proj");
  if (gather) p.buffers.back().last_step = out;
  p.buffers[output].last_step = out;
  if (merged > 0) p.add("merged heads", merged, out, out, BufferRole::workspace);
  p.add("y", R * E * elem, out, out, BufferRole::output);
  if (tp > 1 && !gather) {
    const int comm = p.addStep("comm (all_reduce of y)");
    p.buffers.back().last_step = comm;
  }
  for (size_t i : to_end) p.buffers[i].last_step = p.stepCount() - 1;
  p.buffers.back().last_step = p.stepCount() - 1;  // y, the output, to the end
  return p;
}

}  // namespace attnscope::torch
