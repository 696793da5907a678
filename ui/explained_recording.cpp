#include "ui/explained_recording.h"

#include <algorithm>

#include "core/base/format.h"

namespace attnscope::ui {

using namespace torch_dispatch;

ExplainedRecording explainRecording(std::shared_ptr<const Recording> recording, const std::optional<TorchTarget>& target) {
  ExplainedRecording out;
  out.recorded = recordedTarget(*recording, &out.recorded_problem);
  out.target = target;
  for (const RecordedCall& c : recording->calls) {
    ExplainedCall e;
    e.call = &c;
    if (out.recorded) e.recorded = explainRecordedCall(c, *out.recorded, true);
    else e.recorded.workload = recordedWorkload(c, kNewestTorch);  // what `sweep --from` falls back to
    if (target) e.target = explainRecordedCall(c, *target, false);
    out.calls.push_back(std::move(e));
  }
  // Where the program's attention memory goes, as `show REC` sorts it.
  std::stable_sort(out.calls.begin(), out.calls.end(), [](const ExplainedCall& a, const ExplainedCall& b) {
    return a.call->forward.bytes_max > b.call->forward.bytes_max;
  });
  out.recording = std::move(recording);
  return out;
}

std::optional<TorchTarget> retargetRecording(const Recording& r, const std::optional<TorchVersion>& torch,
                                             const std::optional<std::string>& gpu) {
  if (!torch && !gpu) return std::nullopt;
  const std::optional<TorchTarget> recorded = recordedTarget(r, nullptr);
  const TorchVersion version = torch ? *torch : recorded ? recorded->version : kNewestTorch;
  TorchDevice device = recorded ? recorded->device : TorchDevice::cpu;
  ComputeCapability cc = recorded ? recorded->capability : ComputeCapability{8, 0};
  std::string gpu_name = recorded ? recorded->gpu_name : std::string();
  if (gpu && *gpu == "cpu") {
    device = TorchDevice::cpu;
  } else if (gpu) {
    const auto g = parseGpu(*gpu);
    if (!g) return std::nullopt;
    device = TorchDevice::cuda;
    cc = g->capability;
    gpu_name = g->name;
  }
  TorchTarget t = defaultTorchTarget(version, device, cc);
  t.gpu_name = gpu_name;
  if (recorded) t.cpu_threads = recorded->cpu_threads;
  return t;
}

std::string kernelChange(const CallVerdict& recorded, const CallVerdict& target) {
  if (target.predicted.empty() || target.predicted == recorded.predicted) return {};
  std::string change = recorded.predicted + " -> " + target.predicted;
  if (target.predicted_bytes >= 0 && recorded.predicted_bytes >= 0) {
    const int64_t d = target.predicted_bytes - recorded.predicted_bytes;
    change += concat(": ", d >= 0 ? "+" : "-", formatBytes(d >= 0 ? d : -d));
  }
  return change;
}

std::string onTargetText(const CallVerdict& target) {
  if (target.predicted.empty()) return "?";
  return target.predicted + " " + (target.predicted_bytes < 0 ? std::string("-") : formatBytes(target.predicted_bytes));
}

std::string recordedMaskText(const RecordedCall& c) {
  if (c.mask.kind == "none") return c.is_causal ? "is_causal" : "none";
  return c.mask.kind + " " + shapeText(c.mask.shape) +
         (c.mask.materialised ? " materialised" : c.mask.broadcast ? " broadcast" : "");
}

}  // namespace attnscope::ui
