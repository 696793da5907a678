#pragma once
// The float64 reference of every row, rounded to float: the output a perfect backend gives. For
// tests of the accuracy check itself (it must pass this, and fail anything off by more).

#include <cstdint>
#include <vector>

#include "core/check/reference.h"

namespace attnscope::test {

inline std::vector<float> exactOutput(const WorkloadSpec& s, const HostInputs& in) {
  std::vector<int64_t> rows(static_cast<size_t>(s.batch * s.heads * s.seq_q));
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
  std::vector<double> ref;
  referenceRows(s, in, rows, ref);
  return {ref.begin(), ref.end()};
}

}  // namespace attnscope::test
