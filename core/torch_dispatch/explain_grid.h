#pragma once
// The grid `attnscope explain` is measured on against a real torch release on the CPU
// (scripts/measure_torch_release.sh, tests/torch_dispatch/test_explain_torch.cpp): every dtype,
// head_dim 1..512 with non-multiples of 8, every mask kind and layout, batch and heads, GQA and
// MQA, Lq != Lkv both ways, seq 1, requires_grad on and off, forced kernels. Each case is handed
// to scripts/sdpa_measure.py as JSON; its result is compared with the explainer's prediction:
// the kernel in every case, memory (the forward's peak, what the forward leaves allocated for
// the backward, the backward's peak) within kGridToleranceBytes.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/workload_spec.h"
#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope::torch_dispatch {

// The scalar tensors torch makes around the mask conversion, _safe_softmax and autograd's
// scalar multiplications (4 or 8 bytes each, a few live at once) are not modelled.
inline constexpr int64_t kGridToleranceBytes = 32;
// On CUDA the caching allocator rounds every block up to 512 bytes (and the peak counts the
// rounded sizes): up to 16 live blocks.
inline constexpr int64_t kGridCudaToleranceBytes = 8192;

struct GridCase {
  WorkloadSpec spec;
  std::optional<SdpaKernel> force;  // sdpa_kernel([force]) with every other backend disabled
  bool training = false;            // q, k, v require grad; the backward runs too
};

enum class GridSize { quick, wide };
// The cases, without the ones the spec cannot express.
std::vector<GridCase> explainGrid(GridSize size);

// The case as scripts/sdpa_measure.py reads it.
nlohmann::json measureCaseJson(const GridCase& c, const TorchVersion& version, int threads, size_t id,
                               TorchDevice device = TorchDevice::cpu);

struct GridPrediction {
  std::optional<SdpaKernel> kernel;  // nullopt: torch raises (forced kernel unusable, or an error)
  std::string error;                 // why torch raises
  int64_t extra_bytes = 0;           // forward peak beyond the inputs
  int64_t kept_bytes = 0;            // training: allocated when the forward returns
  int64_t backward_extra_bytes = 0;  // training: the backward's peak beyond its start
};
GridPrediction predictGridCase(const GridCase& c, const TorchTarget& target);

struct GridVerdict {
  bool kernel_ok = false;
  bool memory_ok = false;  // forward, and with training kept and backward, within tolerance
  int64_t worst_diff = 0;  // largest |measured - predicted| over the compared figures
  std::string problem;     // empty when both are ok
};
GridVerdict compareGridCase(const GridCase& c, const GridPrediction& p, const nlohmann::json& measured,
                            int64_t tolerance = kGridToleranceBytes);

// "B2 H8/2 L48x48 D100 bf16 causal train force=math"
std::string describeGridCase(const GridCase& c);

}  // namespace attnscope::torch_dispatch
