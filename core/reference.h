#pragma once
// The float64 reference every backend is checked against, and the accuracy check.
//
// The reference applies the mask rules of README's mask table on its own, written from the table
// rather than shared with the backends (core/mask.h), so a wrong rule in either shows up as an
// accuracy failure instead of agreeing with itself.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_inputs.h"
#include "core/run_result.h"
#include "core/workload_spec.h"

namespace attnscope {

// The check's cost budget in key x head_dim products (each checked row costs Lkv x D of them):
// about 0.1 s of float64 work, so the check stays small next to the run it checks.
inline constexpr int64_t kAccuracyBudget = int64_t{1} << 26;
inline constexpr int64_t kAccuracyAllRows = 4096;  // all rows up to this many, budget permitting
inline constexpr int64_t kAccuracySamples = 256;   // otherwise at most this many sampled rows

// Whether query i attends key j under a structured mask, straight from the README's table.
// Dense masks are element by element (the inputs' mask tensor) and return true here.
bool referenceAttends(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv);

// Rows are flat indices r = (b * H + h) * Lq + i. Output: rows.size() x D doubles (zeros for a
// query with no visible key; `keyless`, when given, marks those rows). Checks `cancel` between
// rows and throws Cancelled (core/backend.h) when it is set.
void referenceRows(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<int64_t>& rows,
                   std::vector<double>& out, const std::atomic<bool>* cancel = nullptr,
                   std::vector<char>* keyless = nullptr);

// Every row when B*H*Lq <= kAccuracyAllRows and the rows fit the budget; otherwise
// min(kAccuracySamples, budget / (Lkv*D)) distinct rows (at least 2) drawn from the seed
// (RandomStream::sample), always including the first and last row, sorted.
std::vector<int64_t> accuracyRows(const WorkloadSpec& spec, int64_t budget = kAccuracyBudget);

// Largest max-abs error accepted for a dtype: fp32 accumulation error, or the rounding of the
// output to fp16 / bf16 (outputs are bounded by 1 since V is in [-1, 1)).
double toleranceFor(DType dtype);

// Compares `output` ([B,H,Lq,D] float) with the reference on accuracyRows(spec). A NaN or Inf in
// the output or the reference fails the check (max_abs_error = +inf) and says where in `problem`
// (e.g. "output row 3 element 0 is nan"), when given. Throws Cancelled when `cancel` is set.
Accuracy checkAccuracy(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<float>& output,
                       const std::atomic<bool>* cancel = nullptr, std::string* problem = nullptr);

}  // namespace attnscope
