#pragma once
// PyTorch's SDPA dispatch rules as data: per kernel, an ordered list of checks, each valid for a
// range of torch versions, with the text of the rule, the message torch prints when it fails,
// and where it was read (shared/reference/torch-sdpa.md: [src] upstream source, [bin] strings of
// the release binary, [cpu] executed with the PyPI wheel). A kernel is usable when none of its
// checks for that version fails; the first failing check is what the explainer quotes.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/torch_dispatch/sdpa_call.h"
#include "core/torch_dispatch/torch_target.h"

namespace attnscope::torch_dispatch {

// torch.nn.attention.SDPBackend. On CPU, flash is the CPU flash kernel.
enum class SdpaKernel { flash, efficient, cudnn, math };
std::string_view toString(SdpaKernel k);  // "flash", "efficient", "cudnn", "math"
std::optional<SdpaKernel> parseSdpaKernel(std::string_view text);
// torch._fused_sdp_choice's integer: MATH 0, FLASH 1, EFFICIENT 2, CUDNN 3.
int fusedSdpChoiceIndex(SdpaKernel k);
std::optional<SdpaKernel> kernelFromFusedSdpChoice(int index);

struct VersionRange {
  TorchVersion first;
  TorchVersion last;  // inclusive; patch 99 means "every patch release"
  bool contains(const TorchVersion& v) const { return first <= v && v <= last; }
};

struct RuleInput {
  const SdpaCall& call;
  const TorchTarget& target;
};
// nullopt: the check passes. Otherwise torch's message for this input.
using RuleCheck = std::optional<std::string> (*)(const RuleInput&);

struct SdpaRule {
  std::string_view id;  // "efficient.head_dim_alignment"
  SdpaKernel kernel;
  TorchDevice device;
  VersionRange versions;
  std::string_view rule;      // what must hold, for people
  std::string_view source;    // "cuda/sdp_utils.cpp check_head_dim_size_mem_efficient [src][bin]"
  RuleCheck check;
  std::string_view note = {};  // uncertainty the reference states, shown with a verdict
};

// Every rule, in the order torch checks them for a kernel.
const std::vector<SdpaRule>& sdpaRules();

struct RuleFailure {
  const SdpaRule* rule = nullptr;
  std::string message;  // torch's message with this call's values
};
// The first check of `kernel` that fails for this call on this target, or nullopt (usable).
std::optional<RuleFailure> firstFailingRule(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target);
// Uncertainty notes of the rules consulted for this kernel (those whose note is not empty and
// whose version range holds) — so an answer that rests on a guess says so.
std::vector<std::string> ruleNotes(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target);

// Mem-efficient attention's head_dim alignment (minimum_gemm_alignment, unchanged 2.0 to 2.15).
int64_t efficientAlignment(DType dtype, ComputeCapability cc);

struct PriorityOrder {
  std::vector<SdpaKernel> kernels;  // the order select_sdp_backend tries them
  std::string reason;               // why this order, e.g. "cuDNN first: sm90, cuDNN 9.26 > 9.15.0"
  std::string source;
  std::vector<std::string> notes;   // uncertainty
};
PriorityOrder sdpaPriorityOrder(const SdpaCall& call, const TorchTarget& target);

}  // namespace attnscope::torch_dispatch
