#pragma once
// The error of one checked tensor against its float64 reference, element by element: the largest
// absolute error (normalised by max(1, the largest |reference|): the check's figure), the sums of
// the relative L2 error, and where the worst and the first non-finite element are. Shared by the
// gradient check (reference_grad) and the layer check (reference_layer).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace attnscope {

struct ErrorTally {
  // Where an element is: a row and the element in it, or (row < 0) a flat index.
  struct At {
    int64_t row = -1, element = -1;
  };

  explicit ErrorTally(const char* n) : name(n) {}
  const char* name;
  double max_err = 0, max_ref = 0, err2 = 0, ref2 = 0;
  At worst{};
  double worst_got = 0, worst_want = 0;
  bool any_nonfinite = false;
  At nonfinite{};  // the first element where the value or the reference is not finite
  double nonfinite_got = 0, nonfinite_want = 0;

  void add(double want, double got, At at) {
    double e = std::fabs(got - want);
    if (!std::isfinite(want) || !std::isfinite(got)) {
      e = INFINITY;
      if (!any_nonfinite) {
        any_nonfinite = true;
        nonfinite = at;
        nonfinite_got = got;
        nonfinite_want = want;
      }
    } else {
      max_ref = std::max(max_ref, std::fabs(want));
      ref2 += want * want;
    }
    if (!(e <= max_err)) {  // keeps a NaN
      max_err = e;
      worst = at;
      worst_got = got;
      worst_want = want;
    }
    err2 += e * e;
  }
  double normalised() const { return max_err / std::max(1.0, max_ref); }
  double relL2() const { return ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2); }
};

// "row 3 element 7", or "element 12" for a flat index.
inline std::string toString(ErrorTally::At at) {
  std::string e = "element " + std::to_string(at.element);
  return at.row < 0 ? e : "row " + std::to_string(at.row) + " " + e;
}

}  // namespace attnscope
