#pragma once
// What a run's accuracy check found and how much of the run it covered (core/check/reference.h).

#include <cstdint>
#include <string>

namespace attnscope {

struct Accuracy {
  bool checked = false;
  double max_abs_error = 0;
  double rel_l2_error = 0;
  int64_t rows_checked = 0;
  int64_t rows_total = 0;
  double tolerance = 0;  // max_abs_error allowed for the dtype
  // A NaN or Inf in the output or the reference makes max_abs_error +inf, so it never passes.
  bool passed() const { return checked && max_abs_error <= tolerance; }
  // rows_checked / rows_total (0 when not checked); every_row: all of them.
  double checkedFraction() const;
  bool everyRow() const { return checked && rows_checked >= rows_total; }
};

// How much the check covered, for people: "every row", "checked 3 % of rows" (never rounded up
// to 100 %), "not checked".
std::string checkCoverage(const Accuracy& a);
// "max abs 3.640e-08, rel L2 3.065e-07 over 256 of 8192 rows (checked 3 % of rows; tolerance
// 1.0e-04): pass", or "not checked".
std::string accuracySummary(const Accuracy& a);

}  // namespace attnscope
