#pragma once
// The float64 reference's building blocks (core/check/reference*.cpp): tensors read as float once, dot
// products in float64 in index order, and a parallel loop over the check's rows. Only the
// reference uses them; the backends have their own kernels.

#include <cstdint>
#include <functional>
#include <vector>

#include "core/inputs/host_inputs.h"

namespace attnscope {

// A tensor's values as float: its own bytes for fp32, else one converted copy.
class FloatView {
 public:
  explicit FloatView(const HostTensor& t);
  const float* data() const { return data_; }
  float operator[](int64_t i) const { return data_[i]; }

 private:
  std::vector<float> copy_;
  const float* data_ = nullptr;
};

// out[j] = sum_d q[d] * k[j * D + d] for j in [lo, hi], in float64, summed in d order (four
// keys at a time for the independent chains, each chain in the order a plain loop would take).
void dotRows(const double* q, const float* k, int64_t D, int64_t lo, int64_t hi, double* out);
void dotRows(const double* q, const double* k, int64_t D, int64_t lo, int64_t hi, double* out);

// The index of the first NaN or Inf in `values`, or -1: a sampled check still reads every value
// for these, so a non-finite result fails wherever it is.
int64_t firstNonFinite(const std::vector<float>& values);

// Calls body(begin, end) on disjoint slices of [0, n) on up to checkThreads() threads, or on the
// caller alone when n * cost_per_item multiply-adds are too few to pay for a thread. The first
// exception (Cancelled) is rethrown once every slice has stopped.
void parallelSlices(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& body);

}  // namespace attnscope
