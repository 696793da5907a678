// The building blocks of the CPU backends: the vectorised softmax row operations, the dtype
// conversions, the matrix product wrapper and the task pool.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/backend/backend.h"
#include "kernels/cpu/cpu_blas.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/softmax_math.h"
#include "kernels/cpu/task_pool.h"

namespace attnscope::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(SoftmaxMath, Exp2MatchesLibmAndMasksToExactZero) {
  std::vector<float> in, out;
  for (float x = -130.0f; x <= 20.0f; x += 0.01337f) in.push_back(x);
  in.push_back(-kInf);
  out.resize(in.size());
  const float sum = exp2Shifted(in.data(), out.data(), static_cast<int64_t>(in.size()), 0.0f, 1.0f);
  double want_sum = 0;
  for (size_t j = 0; j < in.size(); ++j) {
    const double want = in[j] < -126.0f ? 0.0 : std::exp2(static_cast<double>(in[j]));
    want_sum += want;
    if (want == 0.0)
      EXPECT_EQ(out[j], 0.0f) << in[j];
    else
      EXPECT_NEAR(out[j] / want, 1.0, 4e-7) << in[j];
  }
  EXPECT_NEAR(sum / want_sum, 1.0, 1e-6);
  EXPECT_EQ(out.back(), 0.0f);  // -inf, a masked score
}

TEST(SoftmaxMath, ShiftAndScaleGiveNaturalExp) {
  std::vector<float> in = {0.0f, 1.0f, -2.5f, 3.0f}, out(4);
  const float k = 1.4426950408889634f;  // log2(e)
  exp2Shifted(in.data(), out.data(), 4, 3.0f, k);
  for (size_t j = 0; j < in.size(); ++j) EXPECT_NEAR(out[j], std::exp(in[j] - 3.0), 1e-6);
}

TEST(SoftmaxMath, RowHelpers) {
  std::vector<float> x = {1.0f, -3.0f, 7.5f, 2.0f, -kInf};
  EXPECT_EQ(rowMax(x.data(), 5), 7.5f);
  EXPECT_EQ(rowMax(x.data(), 0), -kInf);
  EXPECT_EQ(rowMax(x.data() + 4, 1), -kInf);
  const uint8_t keep[] = {1, 0, 1, 0, 1};
  applyKeepMask(x.data(), keep, 5);
  EXPECT_EQ(x[0], 1.0f);
  EXPECT_EQ(x[1], -kInf);
  EXPECT_EQ(x[3], -kInf);
  scaleRow(x.data(), 3, 2.0f);
  EXPECT_EQ(x[2], 15.0f);
  fillRow(x.data(), 5, 0.0f);
  for (float v : x) EXPECT_EQ(v, 0.0f);
}

TEST(DTypeRows, RoundTripEveryDType) {
  const std::vector<float> values = {0.0f, 1.0f, -0.333333f, 0.7071f, 65504.0f, -1e-3f};
  for (DType d : {DType::fp32, DType::fp16, DType::bf16}) {
    std::vector<uint8_t> storage(values.size() * 2 * static_cast<size_t>(bytesPerElement(d)));
    fromFloat(d, values.data(), static_cast<int64_t>(values.size()), storage.data(), 3);
    std::vector<float> back(values.size());
    toFloat(d, storage.data(), 3, static_cast<int64_t>(values.size()), back.data(), 2.0f);
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(back[i], 2.0f * roundTo(d, values[i])) << toString(d);
  }
}

TEST(CpuBlas, ProductsMatchLoops) {
  const int m = 5, n = 7, k = 3;
  std::vector<float> a(m * k), b(n * k), c(m * n, 1.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 5) - 2.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 3) * 0.5f;
  sgemm(true, m, n, k, 2.0f, a.data(), k, b.data(), k, 1.0f, c.data(), n);  // C = 2 A B^T + C
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float want = 1.0f;
      for (int p = 0; p < k; ++p) want += 2.0f * a[i * k + p] * b[j * k + p];
      EXPECT_FLOAT_EQ(c[i * n + j], want);
    }
  std::vector<float> bt(k * n), c2(m * n, std::nanf(""));  // beta 0 must ignore what C held
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j) bt[p * n + j] = b[j * k + p];
  sgemm(false, m, n, k, 1.0f, a.data(), k, bt.data(), n, 0.0f, c2.data(), n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) EXPECT_FLOAT_EQ(2.0f * c2[i * n + j] + 1.0f, c[i * n + j]);
  EXPECT_FALSE(blasDescription().empty());
}

TEST(TaskPool, RunsEveryTaskOnceOnDistinctWorkers) {
  TaskPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int workers : {1, 2, 4, 9}) {
    std::vector<std::atomic<int>> hits(1000);
    std::mutex mu;
    std::set<int> seen;
    pool.run(1000, workers,
             [&](int worker, int64_t task) {
               hits[static_cast<size_t>(task)].fetch_add(1);
               std::lock_guard lock(mu);
               seen.insert(worker);
             },
             nullptr);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    for (int w : seen) EXPECT_LT(w, std::min(workers, 4));
  }
  EXPECT_GE(TaskPool().threads(), 1);
}

TEST(TaskPool, FirstErrorStopsTheRunAndIsRethrown) {
  TaskPool pool(3);
  std::atomic<int64_t> done{0};
  std::atomic<bool> thrown{false};
  EXPECT_THROW(pool.run(100000, 3,
                        [&](int, int64_t task) {
                          if (task == 10) {
                            thrown = true;
                            throw std::runtime_error("boom");
                          }
                          // Once the error is on its way, each task takes 50 us: a pool that went
                          // on would need seconds for the rest, while one that stops needs the
                          // thrower's few microseconds. (Without the wait, the other workers
                          // could finish all 100000 quick tasks while the thrower was descheduled
                          // on a loaded 2-core machine: seen in CI.)
                          if (thrown) std::this_thread::sleep_for(std::chrono::microseconds(50));
                          done.fetch_add(1);
                        },
                        nullptr),
               std::runtime_error);
  EXPECT_LT(done.load(), 100000 - 1);
  // The pool is still usable afterwards.
  std::atomic<int> after{0};
  pool.run(10, 3, [&](int, int64_t) { after.fetch_add(1); }, nullptr);
  EXPECT_EQ(after.load(), 10);
}

TEST(TaskPool, SeesTheCancelFlag) {
  TaskPool pool(2);
  HostAllocator alloc;
  std::atomic<bool> cancel{false};
  RunContext ctx(alloc, &cancel);
  std::atomic<int64_t> done{0};
  EXPECT_THROW(pool.run(1000000, 2,
                        [&](int, int64_t task) {
                          if (task == 100) cancel.store(true);
                          done.fetch_add(1);
                        },
                        &ctx),
               Cancelled);
  EXPECT_LT(done.load(), 1000);
}

}  // namespace
}  // namespace attnscope::cpu
