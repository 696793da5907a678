#pragma once
// The float64 reference every backend is checked against, and the accuracy check.

#include <cstdint>
#include <vector>

#include "core/host_inputs.h"
#include "core/run_result.h"
#include "core/workload_spec.h"

namespace attnscope {

// Rows are flat indices r = (b * H + h) * Lq + i. Output: rows.size() x D doubles.
void referenceRows(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<int64_t>& rows,
                   std::vector<double>& out);

// Every row when B*H*Lq <= full_limit; otherwise `samples` distinct rows drawn from the seed
// (RandomStream::sample), always including the first and last row, sorted.
std::vector<int64_t> accuracyRows(const WorkloadSpec& spec, int64_t full_limit = 4096, int64_t samples = 256);

// Largest max-abs error accepted for a dtype: fp32 accumulation error, or the rounding of the
// output to fp16 / bf16 (outputs are bounded by 1 since V is in [-1, 1)).
double toleranceFor(DType dtype);

// Compares `output` ([B,H,Lq,D] float) with the reference on accuracyRows(spec).
Accuracy checkAccuracy(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<float>& output);

}  // namespace attnscope
