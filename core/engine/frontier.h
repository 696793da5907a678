#pragma once
// The memory frontier: for each value of one axis (heads, by default), the largest value of
// another (seq, batch or heads) whose predicted peak fits a budget, per line (one of our
// backends' plans, or one torch kernel under the explainer's rules). Exact integer search over
// the predictions: a doubling search for the first value that does not fit, then bisection.
// A peak need not grow with seq: torch 2.1's efficient kernel pads an unaligned mask to 16 columns
// (a buffer that exists only when seq % 16 != 0), so seq 63,776 may fit where 63,777 does not
// and 71,296 fits again. The frontier is therefore the longest seq such that it and every
// shorter one fit, searched on "the 16 values ending here all fit", which grows monotonically
// when each residue class mod 16 does; and the longest multiple of 16 that fits is reported
// beside it when longer (max_aligned). Batch and heads are searched directly. Brute force over
// small budgets holds the search to its definition for every backend and torch kernel, forward
// and train (tests/core/test_frontier.cpp). Needs no device and no torch.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/memory_plan.h"
#include "core/spec/workload_spec.h"
#include "core/torch_dispatch/sdpa_rules.h"
#include "core/torch_dispatch/torch_target.h"

namespace attnscope {

enum class FrontierAxis { seq, batch, heads };
std::string_view toString(FrontierAxis a);
std::optional<FrontierAxis> parseFrontierAxis(std::string_view text);  // "seq", "batch", "heads"
inline constexpr std::string_view kFrontierAxisChoices = "seq, batch, heads";
// spec with the axis set to value (seq: seq_q, and seq_kv when it is "same as seq"; heads: heads,
// and kv_heads when "same as heads").
WorkloadSpec withAxis(WorkloadSpec spec, FrontierAxis axis, int64_t value);
int64_t axisValue(const WorkloadSpec& spec, FrontierAxis axis);
// The largest value searched: seq 2^24, batch 2^20, heads 2^14. A line that fits there is
// reported as unbounded (max = the cap, unbounded = true).
int64_t frontierCap(FrontierAxis axis);

// One line's prediction at a spec.
struct FrontierPeak {
  bool runs = false;    // false: the kernel or backend cannot run the spec (why says why)
  std::string why;      // why not; for torch's own pick, the kernel it picks ("efficient")
  std::string kernel;   // the kernel that ran (torch's pick) or empty
  int64_t bytes = -1;   // predicted peak, inputs included; -1 unknown
  MemoryPlan plan;      // for the deciding buffer
};
struct FrontierLine {
  std::string name;  // "cpu.flash", "torch 2.1 V100 math", "torch 2.1 V100 (picks)"
  std::function<FrontierPeak(const WorkloadSpec&)> predict;
};

// The period of seq's alignment effects (padding to 16 columns): see above.
inline constexpr int64_t kFrontierSeqAlign = 16;
// The search starts at the first value the line runs at, looked for among the first this many
// (cuDNN refuses seq 1; a kernel that runs none of them reports "cannot run").
inline constexpr int64_t kFrontierStartScan = 64;

// Our in-process backends a frontier has lines for, in drawing order (those built here).
inline constexpr std::string_view kFrontierBackends[] = {"cpu.reference", "cpu.flash", "cuda.math", "cuda.chunked",
                                                         "cuda.flash"};
// Torch's lines on a device: its own pick (nullopt) first, then each kernel it can be forced to.
std::vector<std::optional<torch_dispatch::SdpaKernel>> torchFrontierKernels(torch_dispatch::TorchDevice device);
// A torch line's name: "torch 2.1 V100 (picks)", "torch 2.15 cpu math", "torch 2.5.1 sm90 cudnn".
std::string torchFrontierName(const torch_dispatch::TorchTarget& target, std::optional<torch_dispatch::SdpaKernel> kernel);

// One of our backends: its plan where its support() allows the spec on any machine (this
// machine's lack of a device is not held against it: the frontier is for any GPU).
FrontierLine backendFrontierLine(const Backend& backend);
// A torch kernel forced (sdpa_kernel([k])), or torch's own pick (kernel nullopt), under the
// explainer's rules and memory for the target (requires_grad set for pass train).
FrontierLine torchFrontierLine(std::string name, const torch_dispatch::TorchTarget& target,
                               std::optional<torch_dispatch::SdpaKernel> kernel);

// One line at one value of the other axis.
struct FrontierPoint {
  int64_t other = 0;        // the other axis's value
  int64_t max = 0;          // the largest value of the varied axis that fits with every smaller one it runs at; 0: none
  int64_t max_aligned = 0;  // seq: the largest multiple of kFrontierSeqAlign that fits, when beyond max; else 0
  bool unbounded = false;   // fits at frontierCap(): the budget never binds within the search
  int64_t peak_at_max = -1; // predicted peak at max
  std::string kernel_at_max;  // torch's pick at max
  int64_t next = 0;         // the first value past max (max + 1; heads with a fixed width: the next divisor)
  int64_t next_peak = -1;   // predicted peak at next (-1: cannot run there)
  std::string deciding;     // at next: the largest buffer live at the plan's peak step, "P (3.0 GiB)"
  std::string why;          // max == 0: why nothing fits ("cannot run: ..." or "value 1 needs 20 GiB")
  int64_t evaluations = 0;  // predictions made for this point
};
struct FrontierRow {
  std::string line;
  std::vector<FrontierPoint> points;  // one per other-axis value, in order
};

struct FrontierQuery {
  WorkloadSpec spec;  // the other fields
  FrontierAxis vary = FrontierAxis::seq;
  FrontierAxis other = FrontierAxis::heads;
  std::vector<int64_t> others = {1, 2, 4, 8, 16, 32, 64};
  int64_t budget = 0;  // bytes
};
// Validates vary != other and budget > 0 (std::invalid_argument naming the option otherwise).
std::vector<FrontierRow> computeFrontier(const FrontierQuery& q, const std::vector<FrontierLine>& lines);
FrontierPoint frontierPoint(const FrontierQuery& q, const FrontierLine& line, int64_t other);

// "P (3.00 GiB)": the largest buffer live at the plan's peak step; empty for an unknown plan.
std::string decidingBuffer(const MemoryPlan& plan);

// A GPU's memory by name, for --budget GPU: the capacity its maker states ("V100": 16 GiB;
// "A100-40GB" or "A100 40GB": 40 GiB, a size word in the name wins), less the reserve below.
struct GpuBudget {
  std::string gpu;           // the model, "V100"
  int64_t capacity = 0;      // bytes
  int64_t reserve = 0;       // bytes held back (see kGpuContextReserve, kGpuAllocatorShare)
  int64_t budget() const { return capacity - reserve; }
  std::string describe() const;  // "V100 16 GiB less 0.83 GiB reserve (CUDA context 512 MiB + 2 % allocator rounding) = 15.17 GiB"
};
// Held back from a GPU's capacity: what a CUDA context takes before the first tensor (an
// assumption from public reports, 300-600 MiB on recent drivers; give --reserve to change it),
// and the caching allocator's rounding and fragmentation as a share of the capacity.
inline constexpr int64_t kGpuContextReserve = int64_t{512} << 20;
inline constexpr double kGpuAllocatorShare = 0.02;
// nullopt when the text names no GPU whose memory is known (then give --budget in bytes).
std::optional<GpuBudget> gpuBudget(std::string_view text, std::optional<int64_t> reserve = std::nullopt);
std::string knownGpuMemories();  // "V100 16 GiB, T4 16 GiB, ..."

}  // namespace attnscope
