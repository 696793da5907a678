// JSON for `attnscope explain --json` and for the GUI: every field a script needs, bytes as integers.
#include <nlohmann/json.hpp>

#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope::torch_dispatch {

namespace {
nlohmann::json targetJson(const TorchTarget& t) {
  nlohmann::json j{{"torch", t.version.text()}, {"device", toString(t.device)}};
  if (t.device == TorchDevice::cuda) {
    j["capability"] = t.capability.text();
    if (!t.gpu_name.empty()) j["gpu"] = t.gpu_name;
    j["cuda_major"] = t.cuda_major;
    j["cudnn"] = t.cudnn.text();
  } else {
    j["cpu_threads"] = t.cpu_threads;
    j["cpu_amx_bf16"] = t.cpu_amx_bf16;
    j["cpu_amx_fp16"] = t.cpu_amx_fp16;
  }
  j["allow_fp16_bf16_reduction_math"] = t.allow_fp16_bf16_reduction_math;
  j["requires_grad"] = t.requires_grad;
  return j;
}
}  // namespace

nlohmann::json toJson(const SdpaExplanation& x) {
  nlohmann::json verdicts = nlohmann::json::array();
  for (const auto& v : x.verdicts) {
    nlohmann::json j{{"kernel", toString(v.kernel)}, {"usable", v.usable}, {"chosen", v.chosen}};
    if (!v.via.empty()) j["via"] = v.via;
    if (!v.usable)
      j["rejected_by"] = {{"rule_id", v.rule_id}, {"rule", v.rule}, {"torch_message", v.torch_message}, {"source", v.source}};
    verdicts.push_back(j);
  }
  nlohmann::json order = nlohmann::json::array();
  for (auto k : x.order.kernels) order.push_back(toString(k));
  nlohmann::json suggestions = nlohmann::json::array();
  for (const auto& s : x.suggestions)
    suggestions.push_back({{"change", s.change}, {"kernel", toString(s.kernel)}, {"peak_bytes", s.peak_bytes},
                           {"extra_bytes", s.extra_bytes}, {"spec", attnscope::toJson(s.spec)}, {"target", targetJson(s.target)}});
  nlohmann::json out{{"spec", attnscope::toJson(x.spec)},
                     {"target", targetJson(x.target)},
                     {"call", {{"python", x.call.pythonCall()}, {"tensors", x.call.describe()}, {"mask", toString(x.call.mask)},
                               {"mask_shape", x.call.mask_shape}, {"B", x.call.batch}, {"H", x.call.q_heads},
                               {"Hkv", x.call.kv_heads}, {"L", x.call.seq_q}, {"S", x.call.seq_kv}, {"D", x.call.head_dim},
                               {"Dv", x.call.head_dim_v}, {"dtype", toString(x.call.dtype)}, {"enable_gqa", x.call.enable_gqa}}},
                     {"priority_order", {{"kernels", order}, {"reason", x.order.reason}, {"source", x.order.source}}},
                     {"verdicts", verdicts},
                     {"chosen", x.chosen ? nlohmann::json(toString(*x.chosen)) : nlohmann::json(nullptr)},
                     {"notes", x.notes},
                     {"suggestions", suggestions}};
  if (x.chosen) {
    out["fused_sdp_choice"] = fusedSdpChoiceIndex(*x.chosen);
    out["memory"] = {{"peak_bytes", x.peakBytes()}, {"input_bytes", x.memory.input_bytes}, {"extra_bytes", x.extraBytes()},
                     {"peak_step", x.memory.plan.steps.empty() ? "" : x.memory.plan.steps[x.memory.plan.peakStep()]},
                     {"plan", attnscope::toJson(x.memory.plan)}};
  }
  if (!x.error.empty()) out["error"] = x.error;
  return out;
}

}  // namespace attnscope::torch_dispatch
