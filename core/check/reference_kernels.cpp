#include "core/check/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <system_error>
#include <thread>

#include "core/check/check_policy.h"

namespace attnscope {
namespace {

// Below this many multiply-adds a thread costs more than it saves.
constexpr double kProductsPerThread = 1 << 20;

template <class K>
void dotRowsOf(const double* q, const K* k, int64_t D, int64_t lo, int64_t hi, double* out) {
  int64_t j = lo;
  for (; j + 3 <= hi; j += 4) {
    const K *k0 = k + j * D, *k1 = k0 + D, *k2 = k1 + D, *k3 = k2 + D;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t d = 0; d < D; ++d) {
      a0 += q[d] * static_cast<double>(k0[d]);
      a1 += q[d] * static_cast<double>(k1[d]);
      a2 += q[d] * static_cast<double>(k2[d]);
      a3 += q[d] * static_cast<double>(k3[d]);
    }
    out[j] = a0;
    out[j + 1] = a1;
    out[j + 2] = a2;
    out[j + 3] = a3;
  }
  for (; j <= hi; ++j) {
    const K* kj = k + j * D;
    double a = 0;
    for (int64_t d = 0; d < D; ++d) a += q[d] * static_cast<double>(kj[d]);
    out[j] = a;
  }
}

}  // namespace

FloatView::FloatView(const HostTensor& t) {
  if (t.dtype == DType::fp32) {
    data_ = reinterpret_cast<const float*>(t.bytes.data());
    return;
  }
  copy_.resize(static_cast<size_t>(t.bytes.empty() ? 0 : t.elements()));
  for (size_t i = 0; i < copy_.size(); ++i) copy_[i] = t.at(static_cast<int64_t>(i));
  data_ = copy_.data();
}

void dotRows(const double* q, const float* k, int64_t D, int64_t lo, int64_t hi, double* out) {
  dotRowsOf(q, k, D, lo, hi, out);
}
void dotRows(const double* q, const double* k, int64_t D, int64_t lo, int64_t hi, double* out) {
  dotRowsOf(q, k, D, lo, hi, out);
}

int64_t firstNonFinite(const std::vector<float>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return static_cast<int64_t>(i);
  return -1;
}

void parallelSlices(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const double work = static_cast<double>(n) * cost_per_item;
  const int64_t threads = std::clamp<int64_t>(static_cast<int64_t>(work / kProductsPerThread), 1,
                                              std::min<int64_t>(checkThreads(), n));
  if (threads == 1) {
    body(0, n);
    return;
  }
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto slice = [&](int64_t t) {
    try {
      body(n * t / threads, n * (t + 1) / threads);
    } catch (...) {
      errors[static_cast<size_t>(t)] = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  for (int64_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(slice, t);
    } catch (const std::system_error&) {
      slice(t);  // no thread to be had: this one does that slice too
    }
  }
  slice(0);
  for (auto& th : pool) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace attnscope
