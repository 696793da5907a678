#include "core/check/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope {

double Accuracy::checkedFraction() const {
  if (!checked) return 0;
  return rows_total > 0 ? std::min(1.0, static_cast<double>(rows_checked) / static_cast<double>(rows_total)) : 1.0;
}

std::string checkCoverage(const Accuracy& a) {
  if (!a.checked) return "not checked";
  if (a.everyRow()) return "every row";
  const double pct = 100 * a.checkedFraction();
  char buf[48];
  if (pct >= 1)
    std::snprintf(buf, sizeof buf, "checked %.0f %% of rows", std::min(99.0, std::floor(pct)));
  else
    std::snprintf(buf, sizeof buf, "checked %.2g %% of rows", pct);
  return buf;
}

std::string accuracySummary(const Accuracy& a) {
  if (!a.checked) return "not checked";
  char buf[200];
  std::snprintf(buf, sizeof buf, "max abs %.3e, rel L2 %.3e over %lld of %lld rows (%s; tolerance %.1e): %s", a.max_abs_error,
                a.rel_l2_error, static_cast<long long>(a.rows_checked), static_cast<long long>(a.rows_total),
                checkCoverage(a).c_str(), a.tolerance, a.passed() ? "pass" : "FAIL");
  return buf;
}

}  // namespace attnscope
