#include "core/torch_dispatch/sdpa_rules.h"

#include <algorithm>

#include "core/torch_dispatch/sdpa_rules_detail.h"

namespace attnscope::torch_dispatch {

namespace detail {

std::string torchDTypeName(DType d) {
  switch (d) {
    case DType::fp16: return "Half";
    case DType::bf16: return "BFloat16";
    default: return "float";
  }
}

std::string smText(ComputeCapability cc) { return std::to_string(cc.major) + "." + std::to_string(cc.minor); }

std::string sizesText(const SdpaCall& c, char which) {
  const int64_t h = which == 'q' ? c.q_heads : c.kv_heads;
  const int64_t l = which == 'q' ? c.seq_q : c.seq_kv;
  const int64_t d = which == 'v' ? c.head_dim_v : c.head_dim;
  return "[" + std::to_string(c.batch) + ", " + std::to_string(h) + ", " + std::to_string(l) + ", " + std::to_string(d) + "]";
}

bool kvHeadsDiffer(const SdpaCall& c) { return c.kv_heads != c.q_heads; }

}  // namespace detail

using detail::V;

std::string_view toString(SdpaKernel k) {
  switch (k) {
    case SdpaKernel::flash: return "flash";
    case SdpaKernel::efficient: return "efficient";
    case SdpaKernel::cudnn: return "cudnn";
    case SdpaKernel::math: return "math";
  }
  return "?";
}

std::optional<SdpaKernel> parseSdpaKernel(std::string_view text) {
  for (auto k : {SdpaKernel::flash, SdpaKernel::efficient, SdpaKernel::cudnn, SdpaKernel::math})
    if (toString(k) == text) return k;
  return std::nullopt;
}

int fusedSdpChoiceIndex(SdpaKernel k) {
  switch (k) {
    case SdpaKernel::math: return 0;
    case SdpaKernel::flash: return 1;
    case SdpaKernel::efficient: return 2;
    case SdpaKernel::cudnn: return 3;
  }
  return -1;
}

std::optional<SdpaKernel> kernelFromFusedSdpChoice(int index) {
  for (auto k : {SdpaKernel::math, SdpaKernel::flash, SdpaKernel::efficient, SdpaKernel::cudnn})
    if (fusedSdpChoiceIndex(k) == index) return k;
  return std::nullopt;
}

const std::vector<SdpaRule>& sdpaRules() {
  static const std::vector<SdpaRule> rules = [] {
    auto all = detail::cudaRules();
    auto cpu = detail::cpuRules();
    all.insert(all.end(), cpu.begin(), cpu.end());
    return all;
  }();
  return rules;
}

std::optional<RuleFailure> firstFailingRule(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target) {
  if (kernel == SdpaKernel::math) return std::nullopt;  // math takes every input (§3.5)
  if (target.device == TorchDevice::cpu && kernel != SdpaKernel::flash) {
    static const SdpaRule cpu_only{"cpu.no_such_kernel", kernel, TorchDevice::cpu, {V(0), detail::Vlast(15)},
                                   "CPU has only the flash and math kernels", "sdp_utils_cpp.cpp priority_order_cpp [src][cpu]",
                                   nullptr};
    return RuleFailure{&cpu_only, "All tensors need to be on cuda device."};
  }
  const RuleInput in{call, target};
  for (const auto& r : sdpaRules()) {
    if (r.kernel != kernel || r.device != target.device || !r.versions.contains(target.version)) continue;
    if (auto msg = r.check(in)) return RuleFailure{&r, *msg};
  }
  return std::nullopt;
}

std::vector<std::string> ruleNotes(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target) {
  std::vector<std::string> notes;
  const RuleInput in{call, target};
  for (const auto& r : sdpaRules()) {
    if (r.kernel != kernel || r.device != target.device || !r.versions.contains(target.version)) continue;
    if (r.note.empty()) continue;
    // Only where the guessed rule decides something for this call.
    if (r.id.ends_with(".heads") && call.kv_heads == call.q_heads) continue;
    if (r.id.ends_with(".attn_mask") && !call.hasMaskTensor()) continue;
    if (r.id.ends_with(".dtype") && call.dtype != DType::fp16) continue;
    if (r.id == "cudnn.head_dim" && call.head_dim <= 128) continue;
    (void)in;
    notes.emplace_back(r.note);
  }
  return notes;
}

int64_t efficientAlignment(DType dtype, ComputeCapability cc) {
  const bool is_half = dtype == DType::fp16 || dtype == DType::bf16;
  const bool tensor_cores = cc.major >= 8 || (cc.major >= 7 && is_half);
  int64_t a = cc.major >= 8 ? 4 : 1;
  if (tensor_cores) a = std::max<int64_t>(a, 128 / (is_half ? 16 : 32));
  return a;
}

PriorityOrder sdpaPriorityOrder(const SdpaCall& call, const TorchTarget& t) {
  using K = SdpaKernel;
  const auto& v = t.version;
  const auto cc = t.capability;
  if (t.device == TorchDevice::cpu) {
    if (v < V(1)) return {{K::math}, "torch 2.0 on CPU: math only", "attention.cpp (2.0) [src]", {}};
    return {{K::flash, K::math}, "CPU: flash, then math", "sdp_utils_cpp.cpp priority_order_cpp [src][cpu]", {}};
  }
  const std::vector<K> flash_first{K::flash, K::efficient, K::math};
  if (v < V(2)) {
    // xformers heuristic (S2.0 priority_order); 2.1 adds a rule for training.
    const int64_t threads_flash = call.batch * call.q_heads;
    const int64_t threads_cutlass = threads_flash * (call.seq_q / 64);
    bool efficient_first = (threads_flash < 60 && threads_cutlass / 2 >= threads_flash) || call.head_dim == 128;
    std::string why = "B·H = " + std::to_string(threads_flash) + ", B·H·⌊Lq/64⌋ = " + std::to_string(threads_cutlass);
    if (v >= V(1) && t.requires_grad) {
      efficient_first = 6 * threads_flash > call.seq_q;
      why = "training: 6·B·H = " + std::to_string(6 * threads_flash) + " vs Lq = " + std::to_string(call.seq_q);
    }
    if (efficient_first)
      return {{K::efficient, K::flash, K::math}, "efficient first (heuristic: " + why + ")", "cuda/sdp_utils.cpp priority_order (S2.0/S2.1) [src]", {}};
    return {flash_first, "flash first (heuristic: " + why + ")", "cuda/sdp_utils.cpp priority_order (S2.0/S2.1) [src]", {}};
  }
  if (v < V(3))
    return {flash_first, "flash, efficient, math (fixed order)", "cuda/sdp_utils.cpp priority_order [src][bin]",
            {"the 2.2 order is inferred from the binary and later sources, not read from the 2.2 tree"}};
  const std::vector<K> cudnn_first{K::cudnn, K::flash, K::efficient, K::math};
  const std::vector<K> cudnn_last{K::flash, K::efficient, K::math, K::cudnn};
  if (v < V(5))
    return {cudnn_first, "cuDNN listed first but usable only with TORCH_CUDNN_SDPA_ENABLED=1 on sm80-sm90",
            "cuda/sdp_utils.cpp priority_order (S2.3) [src][bin]",
            v >= V(4) ? std::vector<std::string>{"2.4 is assumed to order like 2.3"} : std::vector<std::string>{}};
  if (v == V(5, 0)) {
    if (cc.major >= 9 && t.cudnn.major >= 9)
      return {cudnn_first, "2.5.0 prefers cuDNN on sm90+ (check_prefer_cudnn_attention)", "cuda/sdp_utils.cpp (S2.5.0) [src]", {}};
    return {cudnn_last, "cuDNN last (2.5.0 prefers it only on sm90+)", "cuda/sdp_utils.cpp (S2.5.0) [src]", {}};
  }
  if (v < V(9)) {
    std::vector<std::string> notes;
    if (v >= V(8)) notes.push_back("2.8's cuDNN priority is assumed like 2.6/2.7 (not verified)");
    return {cudnn_last, "cuDNN last: made opt-in by PR #138522 (2.5.1)", "cuda/sdp_utils.cpp; torch._C._get_sdp_priority_order() [src][bin]", notes};
  }
  if (v < V(10)) {
    const bool arch = (cc.major == 9 || cc.major == 10) && cc.minor == 0;
    const bool built = t.cudnn >= CudnnVersion{9, 9, 0};
    if (t.env_cudnn_sdpa_preferred && built && arch)
      return {cudnn_first, "cuDNN first: sm" + std::to_string(cc.number()) + ", cuDNN " + t.cudnn.text() + " >= 9.9, TORCH_CUDNN_SDPA_PREFERRED not false",
              "cuda/sdp_utils.cpp check_prefer_cudnn_attention (S2.9) [src][bin]", {}};
    std::string why = !t.env_cudnn_sdpa_preferred ? "TORCH_CUDNN_SDPA_PREFERRED=0"
                      : !built                    ? "cuDNN " + t.cudnn.text() + " < 9.9"
                                                  : "GPU is not sm90 or sm100";
    return {cudnn_last, "cuDNN last (" + why + ")", "cuda/sdp_utils.cpp check_prefer_cudnn_attention (S2.9) [src][bin]", {}};
  }
  const bool arch = (cc.major == 9 || cc.major == 10) && (t.cuda_major >= 13 || cc.minor == 0 || cc.minor == 3);
  const bool runtime = t.cudnn > CudnnVersion{9, 15, 0};
  if (!t.env_cudnn_sdpa_deprioritized && runtime && arch)
    return {cudnn_first, "cuDNN first: sm" + std::to_string(cc.number()) + ", runtime cuDNN " + t.cudnn.text() + " > 9.15.0",
            "cuda/sdp_utils.cpp check_prefer_cudnn_attention (newest) [src]", {}};
  std::string why = t.env_cudnn_sdpa_deprioritized ? "TORCH_CUDNN_SDPA_DEPRIORITIZED=1"
                    : !runtime                     ? "runtime cuDNN " + t.cudnn.text() + " <= 9.15.0"
                                                   : "GPU is not sm9x/sm10x (with CUDA < 13: minor 0 or 3)";
  return {cudnn_last, "cuDNN last (" + why + ")", "cuda/sdp_utils.cpp check_prefer_cudnn_attention (newest) [src]", {}};
}

}  // namespace attnscope::torch_dispatch
