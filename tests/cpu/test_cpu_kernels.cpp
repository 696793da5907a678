// The building blocks of the CPU backends: the vectorised softmax row operations, the dtype
// conversions, the matrix product wrapper and the task pool.

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/backend/backend.h"
#include "kernels/cpu/cpu_blas.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/softmax_math.h"
#include "kernels/cpu/task_pool.h"
#include "kernels/cpu/transpose.h"

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

// fp16 rows convert through F16C from the avx2 variant up and through core's portable
// conversions on the baseline: the same bits for every half and every float that is not a NaN
// (a NaN stays a NaN), odd lengths included so the vector body and its tail both run.
TEST(DTypeRows, Fp16ConversionsAgreeAcrossVariants) {
  if (!cpuSupports(CpuIsa::avx2)) GTEST_SKIP() << "this CPU lacks avx2/f16c (" << cpuIsaMissing(CpuIsa::avx2) << ")";
  std::vector<uint16_t> halves(65536 + 5);
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i * 40503u);  // odd: every half once
  std::vector<float> floats;
  for (uint32_t bits : {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x33000000u, 0x33000001u, 0x337fffffu,
                        0x38800000u, 0x387fffffu, 0x38801000u, 0x38802000u, 0x477fefffu, 0x477ff000u, 0x477fe000u,
                        0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x3f801000u, 0x3f803000u})
    floats.push_back(std::bit_cast<float>(bits));
  uint32_t x = 12345u;
  for (int i = 0; i < 200003; ++i) {  // random bit patterns over the whole float range
    x = x * 1664525u + 1013904223u;
    floats.push_back(std::bit_cast<float>(x));
  }
  for (uint32_t e = 0x30000000u; e < 0x48000000u; e += 0x00123457u) floats.push_back(std::bit_cast<float>(e));

  struct Out {
    std::vector<float> to, added;
    std::vector<uint16_t> from;
  };
  auto convert = [&](CpuIsa isa) {
    setCpuIsaOverride(isa);
    Out o;
    const int64_t nh = static_cast<int64_t>(halves.size()) - 3, nf = static_cast<int64_t>(floats.size());
    o.to.resize(static_cast<size_t>(nh));
    toFloat(DType::fp16, reinterpret_cast<const uint8_t*>(halves.data()), 3, nh, o.to.data(), 0.5f);
    o.added.assign(static_cast<size_t>(nh), 1.0f);
    addToFloat(DType::fp16, reinterpret_cast<const uint8_t*>(halves.data()), 3, nh, o.added.data(), 2.0f);
    o.from.resize(static_cast<size_t>(nf) + 1);
    fromFloat(DType::fp16, floats.data(), nf, reinterpret_cast<uint8_t*>(o.from.data()), 1);
    setCpuIsaOverride(std::nullopt);
    return o;
  };
  const Out want = convert(CpuIsa::baseline);
  for (CpuIsa isa : kAllCpuIsas) {
    if (isa == CpuIsa::baseline || !cpuSupports(isa)) continue;
    const Out got = convert(isa);
    int bad = 0;
    for (size_t i = 0; i < want.to.size() && bad < 5; ++i) {
      const bool nan = std::isnan(want.to[i]);
      if (nan ? !std::isnan(got.to[i]) || !std::isnan(got.added[i])
              : std::bit_cast<uint32_t>(got.to[i]) != std::bit_cast<uint32_t>(want.to[i]) ||
                    std::bit_cast<uint32_t>(got.added[i]) != std::bit_cast<uint32_t>(want.added[i])) {
        ADD_FAILURE() << toString(isa) << ": half 0x" << std::hex << halves[i + 3] << " gives " << got.to[i] << " / "
                      << got.added[i] << ", baseline " << want.to[i] << " / " << want.added[i];
        ++bad;
      }
    }
    for (size_t i = 0; i < floats.size() && bad < 5; ++i) {
      const uint16_t w = want.from[i + 1], g = got.from[i + 1];
      const bool nan = std::isnan(floats[i]);
      const bool half_nan = (g & 0x7c00u) == 0x7c00u && (g & 0x3ffu) != 0;
      if (nan ? !half_nan || (g & 0x8000u) != (w & 0x8000u) : g != w) {
        ADD_FAILURE() << toString(isa) << ": float bits 0x" << std::hex << std::bit_cast<uint32_t>(floats[i])
                      << " gives half 0x" << g << ", baseline 0x" << w;
        ++bad;
      }
    }
  }
}

// Awkward shapes around the 32 x 32 blocks, strides wider than the matrices: every element lands
// transposed, and what lies between out's rows (its padding) is never written.
TEST(Transpose, BlockedMatchesTheDefinition) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {1, 70}, {70, 1}, {31, 32}, {32, 33}, {33, 65}, {64, 128},
                            {257, 100}}) {
    const int64_t ldi = cols + 3, ldo = rows + 5;
    std::vector<float> in(static_cast<size_t>(rows * ldi)), out(static_cast<size_t>(cols * ldo), -7.0f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
    std::vector<uint16_t> in16(in.size()), out16(out.size(), 0xbeef);
    for (size_t i = 0; i < in.size(); ++i) in16[i] = static_cast<uint16_t>(i * 7u);
    transposeBlocked(in.data(), rows, cols, ldi, out.data(), ldo);
    transposeBlocked(in16.data(), rows, cols, ldi, out16.data(), ldo);
    int bad = 0;
    for (int64_t c = 0; c < cols && bad < 5; ++c)
      for (int64_t r = 0; r < ldo && bad < 5; ++r) {
        const size_t o = static_cast<size_t>(c * ldo + r), i = static_cast<size_t>(r * ldi + c);
        const float want = r < rows ? in[i] : -7.0f;
        const uint16_t want16 = r < rows ? in16[i] : uint16_t{0xbeef};
        if (out[o] != want || out16[o] != want16) {
          ADD_FAILURE() << rows << " x " << cols << ": out(" << c << ", " << r << ") = " << out[o] << " / " << out16[o]
                        << ", want " << want << " / " << want16;
          ++bad;
        }
      }
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
