#include "kernels/torch/torch_prediction.h"

#include <cstdlib>
#include <cstring>

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

}  // namespace attnscope::torch
