#pragma once
// The SDPA dispatch explainer: for a workload and a torch target, which kernel PyTorch's
// scaled_dot_product_attention would pick and why (each kernel in priority order with the first
// rule that rejects it), what the winner's forward pass costs as named buffers, and the smallest
// changes that move the workload to a cheaper kernel. Needs neither torch nor a GPU.
//
// Use from other code (e.g. the torch backends' support()/plan()):
//   auto target = defaultTorchTarget(*parseTorchVersion("2.5.1"), TorchDevice::cuda, {8, 0});
//   SdpaExplanation x = explainSdpa(spec, target);
//   x.chosen (kernel), x.memory.plan (MemoryPlan, inputs included), x.verdicts (reasons)
//   explainForcedSdpa(spec, target, SdpaKernel::efficient)  // sdpa_kernel([EFFICIENT_ATTENTION])

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/torch_dispatch/sdpa_call.h"
#include "core/torch_dispatch/sdpa_memory.h"
#include "core/torch_dispatch/sdpa_rules.h"
#include "core/torch_dispatch/torch_target.h"
#include "core/spec/workload_spec.h"

namespace attnscope::torch_dispatch {

struct KernelVerdict {
  SdpaKernel kernel = SdpaKernel::math;
  std::string via;      // "" (SDPA's own choice), "causal_lower_right bias", "materialised causal_lower_right mask"
  bool usable = false;  // every check passes
  bool chosen = false;
  // The first failing check (empty when usable).
  std::string rule_id;
  std::string rule;
  std::string torch_message;
  std::string source;
};

struct SdpaSuggestion {
  std::string change;  // "pad head_dim 4 -> 8", "torch 2.4.0", "dtype fp32"
  SdpaKernel kernel = SdpaKernel::math;
  int64_t peak_bytes = 0;
  int64_t extra_bytes = 0;
  WorkloadSpec spec;
  TorchTarget target;
};

struct SdpaExplanation {
  WorkloadSpec spec;
  TorchTarget target;
  SdpaCall call;
  PriorityOrder order;
  std::vector<KernelVerdict> verdicts;  // in the order torch tries them
  std::optional<SdpaKernel> chosen;     // nullopt: torch raises (error says what)
  std::string error;
  SdpaMemory memory;                    // of the chosen kernel
  std::vector<std::string> notes;       // uncertainty and what is not modelled
  std::vector<SdpaSuggestion> suggestions;

  int64_t peakBytes() const { return memory.peakBytes(); }
  int64_t extraBytes() const { return memory.extraBytes(); }
  // "torch would pick efficient" / "torch would pick math (efficient: head_dim 4 not a multiple of 8)"
  std::string headline() const;
};

struct ExplainOptions {
  bool suggestions = true;
};

SdpaExplanation explainSdpa(const WorkloadSpec& spec, const TorchTarget& target, ExplainOptions options = {});
SdpaExplanation explainSdpa(const WorkloadSpec& spec, const TorchTarget& target, const SdpaCall& call,
                            ExplainOptions options = {});

// A forced kernel (sdpa_kernel([k]) with every other backend, math included, disabled): whether it
// can run, and its memory. When it cannot, torch raises "No available kernel. Aborting execution."
struct ForcedSdpa {
  KernelVerdict verdict;
  SdpaMemory memory;
};
ForcedSdpa explainForcedSdpa(const WorkloadSpec& spec, const TorchTarget& target, SdpaKernel kernel);

// Why running `kernel` on this call fails although the dispatch allows it (the CPU math path in
// fp16 on releases without a Half GEMM), or nullopt.
std::optional<std::string> sdpaRunError(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target);

nlohmann::json toJson(const SdpaExplanation& x);

}  // namespace attnscope::torch_dispatch
