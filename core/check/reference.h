#pragma once
// The float64 reference every backend is checked against, and the accuracy check.
//
// The reference applies the mask rules of the user guide's mask table on its own, written from the table
// rather than shared with the backends (core/spec/mask.h), so a wrong rule in either shows up as an
// accuracy failure instead of agreeing with itself.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/check/check_policy.h"
#include "core/inputs/host_inputs.h"
#include "core/check/accuracy.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// Whether query i attends key j under a structured mask, straight from the user guide's table (docs/USER_GUIDE.md, "Workloads and masks").
// Dense masks are element by element (the inputs' mask tensor) and return true here.
bool referenceAttends(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv);

// Rows are flat indices r = (b * H + h) * Lq + i. Output: rows.size() x D doubles (zeros for a
// query with no visible key; `keyless`, when given, marks those rows). Runs on checkThreads()
// threads; checks `cancel` between rows and throws Cancelled (core/base/cancel.h) when it is set.
void referenceRows(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<int64_t>& rows,
                   std::vector<double>& out, const std::atomic<bool>* cancel = nullptr,
                   std::vector<char>* keyless = nullptr);

// The query rows a check holds, sorted. every_row: all B*H*Lq. sampled: every row when
// B*H*Lq <= kAccuracyAllRows and the rows fit `budget`; otherwise what CheckSample always takes
// (core/check/check_sample.h: a row of every query block of every batch-head, the mask's edges, the
// largest |q| of every batch-head and the kCheckLargest largest overall, the rows at risk:
// scale |q_i| max_j |k_j| >= tolerance x 2^20, where float32 rounding of the scores alone could
// exceed the tolerance) plus min(kAccuracySamples, budget / (Lkv*D)) seeded rows. `also`, when
// given (G for the gradients), adds its largest rows as |q|'s are.
std::vector<int64_t> accuracyRows(const WorkloadSpec& spec, const HostInputs& inputs, CheckDepth depth,
                                  int64_t budget = kAccuracyBudget, const HostTensor* also = nullptr);

// Whether scores as large as `bound` (an upper bound on |scale q.k|) make float32 rounding of the
// scores alone able to exceed the dtype's tolerance (bound >= tolerance x 2^20, about 105 for
// fp32): such rows and keys are always checked. A non-finite bound is at risk too.
bool scoresAtRisk(double bound, DType dtype);

// The largest of each group of `per_group` consecutive squared norms, as a norm (its root).
std::vector<double> largestNorms(const std::vector<double>& squared_norms, int64_t per_group);

// Largest max-abs error accepted for a dtype: fp32 accumulation error, or the rounding of the
// output to fp16 / bf16 (outputs are bounded by 1 since V is in [-1, 1)).
double toleranceFor(DType dtype);

// Compares `output` ([B,H,Lq,D] float) with the reference on accuracyRows(spec, inputs, depth). A
// NaN or Inf in the output or the reference fails the check (max_abs_error = +inf) and says where
// in `problem` (e.g. "output row 3 element 0 is nan"), when given. Throws Cancelled when `cancel`
// is set.
Accuracy checkAccuracy(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<float>& output,
                       const std::atomic<bool>* cancel = nullptr, std::string* problem = nullptr,
                       CheckDepth depth = CheckDepth::sampled);

}  // namespace attnscope
