// checkAccuracy must refuse what is wrong: a NaN or an infinity anywhere in the output, inputs
// that make the float64 reference non-finite, and an output off by more than the tolerance. The
// tolerances are the user guide's numbers, written here as literals so that a change to toleranceFor
// shows up as a failure instead of being compared with itself.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/check/reference.h"
#include "tests/support/exact_output.h"
#include "tests/support/spec_builder.h"

namespace attnscope {
namespace {

using test::exactOutput;

WorkloadSpec smallSpec(DType dtype) {
  return test::specOf({.heads = 2, .seq_q = 9, .seq_kv = 13, .head_dim = 8, .dtype = dtype, .mask = "causal", .seed = 5});
}

constexpr DType kDTypes[] = {DType::fp32, DType::fp16, DType::bf16};

TEST(AccuracyCheck, TolerancesAreTheReadmesNumbers) {
  EXPECT_EQ(toleranceFor(DType::fp32), 1e-4);
  EXPECT_EQ(toleranceFor(DType::fp16), 4e-3);
  EXPECT_EQ(toleranceFor(DType::bf16), 3e-2);
  const double readme[] = {1e-4, 4e-3, 3e-2};
  for (int i = 0; i < 3; ++i) {
    const WorkloadSpec s = smallSpec(kDTypes[i]);
    const HostInputs in = HostInputs::generate(s);
    EXPECT_EQ(checkAccuracy(s, in, exactOutput(s, in)).tolerance, readme[i]) << toString(kDTypes[i]);
  }
}

TEST(AccuracyCheck, TheExactOutputPassesEveryRow) {
  for (DType d : kDTypes) {
    const WorkloadSpec s = smallSpec(d);
    const HostInputs in = HostInputs::generate(s);
    const Accuracy a = checkAccuracy(s, in, exactOutput(s, in));
    EXPECT_TRUE(a.passed()) << toString(d) << " max abs " << a.max_abs_error;
    EXPECT_LT(a.max_abs_error, 1e-6) << toString(d);
    EXPECT_EQ(a.rows_checked, s.batch * s.heads * s.seq_q);
  }
}

TEST(AccuracyCheck, ANonFiniteOutputFails) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (DType d : kDTypes)
    for (float value : bad) {
      const WorkloadSpec s = smallSpec(d);
      const HostInputs in = HostInputs::generate(s);
      std::vector<float> one = exactOutput(s, in);
      one[one.size() / 2] = value;
      EXPECT_FALSE(checkAccuracy(s, in, one).passed()) << toString(d) << " one element " << value;
      std::vector<float> all(one.size(), value);
      EXPECT_FALSE(checkAccuracy(s, in, all).passed()) << toString(d) << " every element " << value;
    }
}

TEST(AccuracyCheck, NaNForAQueryWithNoVisibleKeySaysSo) {
  // torch < 2.5 (measured on 2.4.1) returns NaN for a query that sees no key; the reference gives
  // zeros, so such a run fails, and the message says which kind of row it was.
  WorkloadSpec s = smallSpec(DType::fp32);
  s.seq_q = 13;
  s.seq_kv = 9;  // causal, aligned bottom-right: the first four queries see no key
  const HostInputs in = HostInputs::generate(s);
  std::vector<float> out = exactOutput(s, in);
  std::vector<int64_t> rows{0, 4};
  std::vector<double> ref;
  std::vector<char> keyless;
  referenceRows(s, in, rows, ref, nullptr, &keyless);
  EXPECT_EQ(keyless, (std::vector<char>{1, 0}));
  for (int64_t row : {int64_t{0}, int64_t{4}}) {
    std::vector<float> bad = out;
    bad[static_cast<size_t>(row * s.headDim())] = std::numeric_limits<float>::quiet_NaN();
    std::string problem;
    EXPECT_FALSE(checkAccuracy(s, in, bad, nullptr, &problem).passed());
    EXPECT_EQ(problem.find("no visible key") != std::string::npos, row == 0) << problem;
  }
}

// Before the run hardening (issue 8) the reference's std::max dropped the NaN
// score, the row became "no visible key" (zeros) and the check passed.
TEST(AccuracyCheck, InputsWithANonFiniteValueFailEvenAgainstTheirOwnReference) {
  // An infinity in q makes the reference NaN for its row; a check that drops NaN would pass.
  for (DType d : kDTypes)
    for (float value : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
      const WorkloadSpec s = smallSpec(d);
      HostInputs in = HostInputs::generate(s);
      const std::vector<float> before = exactOutput(s, in);
      in.q.set(3, value);
      const std::vector<float> output = exactOutput(s, in);
      EXPECT_FALSE(checkAccuracy(s, in, output).passed()) << toString(d) << " q[3] = " << value;
      EXPECT_FALSE(checkAccuracy(s, in, before).passed()) << toString(d) << " q[3] = " << value;
    }
}

TEST(AccuracyCheck, AnOutputOffByTwiceTheToleranceFailsAndHalfPasses) {
  for (DType d : kDTypes) {
    const WorkloadSpec s = smallSpec(d);
    const HostInputs in = HostInputs::generate(s);
    const double tol = toleranceFor(d);
    for (size_t at : {size_t{0}, exactOutput(s, in).size() - 1}) {
      std::vector<float> out = exactOutput(s, in);
      out[at] += static_cast<float>(2 * tol);
      const Accuracy a = checkAccuracy(s, in, out);
      EXPECT_FALSE(a.passed()) << toString(d) << " element " << at;
      EXPECT_NEAR(a.max_abs_error, 2 * tol, tol * 1e-2) << toString(d);
      out = exactOutput(s, in);
      out[at] -= static_cast<float>(tol / 2);
      EXPECT_TRUE(checkAccuracy(s, in, out).passed()) << toString(d) << " element " << at;
    }
  }
}

TEST(AccuracyCheck, AWrongOutputFails) {
  for (DType d : kDTypes) {
    const WorkloadSpec s = smallSpec(d);
    const HostInputs in = HostInputs::generate(s);
    const std::vector<float> exact = exactOutput(s, in);
    const std::vector<float> zeros(exact.size(), 0.0f);
    EXPECT_FALSE(checkAccuracy(s, in, zeros).passed()) << toString(d);
    // Right values in the wrong rows: the first two rows swapped.
    std::vector<float> swapped = exact;
    const size_t D = static_cast<size_t>(s.headDim());
    std::swap_ranges(swapped.begin(), swapped.begin() + D, swapped.begin() + D);
    EXPECT_FALSE(checkAccuracy(s, in, swapped).passed()) << toString(d);
    // The reference of another mask (none instead of causal) is not this run's output.
    WorkloadSpec unmasked = s;
    unmasked.mask.kind = MaskKind::none;
    EXPECT_FALSE(checkAccuracy(s, in, exactOutput(unmasked, in)).passed()) << toString(d);
  }
}

}  // namespace
}  // namespace attnscope
