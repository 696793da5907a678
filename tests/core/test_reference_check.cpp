// The accuracy check and the float64 reference: a wrong, NaN or Inf output never passes, the
// tolerances are the user guide's numbers, the reference's mask rules come from the guide's table
// (not from the backends' code), and the check's cost is bounded by its budget.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/backend/backend.h"
#include "core/spec/mask.h"
#include "core/check/reference.h"
#include "tests/support/exact_output.h"
#include "tests/support/spec_builder.h"

using namespace attnscope;

namespace {

using test::exactOutput;

WorkloadSpec tiny(const char* mask = "none") {
  return test::specOf({.heads = 2, .seq_q = 9, .head_dim = 4, .mask = mask, .seed = 0});
}

}  // namespace

TEST(ReferenceCheck, TolerancesAreTheReadmeNumbers) {
  EXPECT_EQ(toleranceFor(DType::fp32), 1e-4);
  EXPECT_EQ(toleranceFor(DType::fp16), 4e-3);
  EXPECT_EQ(toleranceFor(DType::bf16), 3e-2);
}

TEST(ReferenceCheck, ExactPassesAndWrongNanInfFail) {
  const WorkloadSpec s = tiny();
  const HostInputs in = HostInputs::generate(s);
  std::vector<float> out = exactOutput(s, in);
  EXPECT_TRUE(checkAccuracy(s, in, out).passed());

  std::vector<float> off = out;
  off[5] += 2e-4f;  // just over the fp32 tolerance
  Accuracy a = checkAccuracy(s, in, off);
  EXPECT_FALSE(a.passed());
  EXPECT_NEAR(a.max_abs_error, 2e-4, 1e-5);

  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> b = out;
    b[7] = bad;
    std::string problem;
    a = checkAccuracy(s, in, b, nullptr, &problem);
    EXPECT_FALSE(a.passed()) << bad;
    EXPECT_TRUE(std::isinf(a.max_abs_error)) << bad;
    EXPECT_NE(problem.find("output row 1 element 3"), std::string::npos) << problem;
  }
  std::vector<float> allNan(out.size(), std::numeric_limits<float>::quiet_NaN());
  EXPECT_FALSE(checkAccuracy(s, in, allNan).passed());
  EXPECT_FALSE(checkAccuracy(s, in, std::vector<float>(3, 0.0f)).passed());  // wrong length
}

TEST(ReferenceCheck, NonFiniteInputMakesTheReferenceFailNotPass) {
  const WorkloadSpec s = tiny();
  HostInputs in = HostInputs::generate(s);
  const std::vector<float> out = exactOutput(s, in);
  in.q.set(0, std::numeric_limits<float>::infinity());  // row 0's scores become inf/NaN
  std::string problem;
  Accuracy a = checkAccuracy(s, in, out, nullptr, &problem);
  EXPECT_FALSE(a.passed());
  EXPECT_NE(problem.find("reference row 0"), std::string::npos) << problem;
  HostInputs nanKey = HostInputs::generate(s);
  nanKey.k.set(0, std::numeric_limits<float>::quiet_NaN());
  EXPECT_FALSE(checkAccuracy(s, nanKey, exactOutput(s, HostInputs::generate(s))).passed());
}

TEST(ReferenceCheck, ReferenceMaskRulesAreTheReadmeTable) {
  // Written out by hand from the table (off = Lkv - Lq), not computed with any shared code.
  MaskSpec causal{MaskKind::causal, 0, 1.0};
  EXPECT_TRUE(referenceAttends(causal, 0, 2, 3, 5));   // j <= i + 2
  EXPECT_FALSE(referenceAttends(causal, 0, 3, 3, 5));
  EXPECT_TRUE(referenceAttends(causal, 2, 4, 3, 5));
  EXPECT_FALSE(referenceAttends(causal, 0, 0, 5, 3));  // Lq > Lkv: query 0 sees nothing
  EXPECT_TRUE(referenceAttends(causal, 2, 0, 5, 3));
  MaskSpec window{MaskKind::window, 2, 1.0};
  EXPECT_TRUE(referenceAttends(window, 4, 4, 6, 6));
  EXPECT_TRUE(referenceAttends(window, 4, 3, 6, 6));
  EXPECT_FALSE(referenceAttends(window, 4, 2, 6, 6));  // more than W keys back
  EXPECT_FALSE(referenceAttends(window, 4, 5, 6, 6));  // the future
  MaskSpec block{MaskKind::block, 3, 1.0};
  EXPECT_TRUE(referenceAttends(block, 4, 3, 8, 8));
  EXPECT_TRUE(referenceAttends(block, 4, 5, 8, 8));
  EXPECT_FALSE(referenceAttends(block, 4, 2, 8, 8));
  EXPECT_FALSE(referenceAttends(block, 4, 6, 8, 8));
  EXPECT_TRUE(referenceAttends(MaskSpec{}, 0, 99, 1, 100));
}

TEST(ReferenceCheck, BackendMaskRangesAgreeWithTheReferenceRules) {
  // core/spec/mask.h (used by every backend) against the reference's own rules, over awkward sizes:
  // a wrong rule on either side fails here and in every backend accuracy test.
  for (const char* m : {"causal", "window:1", "window:3", "window:8", "block:1", "block:3", "block:5", "none"})
    for (auto [lq, lkv] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 7}, {5, 9}, {9, 5}, {13, 13}}) {
      const MaskSpec mask = *parseMask(m).mask;
      if (mask.kind == MaskKind::block && lq != lkv) continue;
      for (int64_t i = 0; i < lq; ++i)
        for (int64_t j = 0; j < lkv; ++j)
          ASSERT_EQ(maskAllows(mask, i, j, lq, lkv), referenceAttends(mask, i, j, lq, lkv))
              << m << " Lq " << lq << " Lkv " << lkv << " i " << i << " j " << j;
    }
}

TEST(ReferenceCheck, RowsFollowTheCostBudget) {
  WorkloadSpec s;
  s.heads = 1;
  s.seq_q = 4096;
  s.seq_kv = 16384;  // 4096 rows of 16384 keys would cost 32 s
  // The seeded part of a sampled check follows the budget; beside it, what the sample always
  // holds: a row of each of the 64 query blocks.
  auto rows = accuracyRows(s, HostInputs{}, CheckDepth::sampled);
  EXPECT_EQ(static_cast<int64_t>(rows.size()), kAccuracyBudget / (16384 * 64) + 64);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 4095);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  s.seq_kv = int64_t{1} << 30;  // one row is over budget: the blocks' rows, first and last
  EXPECT_EQ(accuracyRows(s, HostInputs{}, CheckDepth::sampled).size(), 64u + 2u);
  s = {};
  s.heads = 4;
  s.seq_q = 100;  // small: every row
  EXPECT_EQ(accuracyRows(s, HostInputs{}, CheckDepth::sampled).size(), 400u);
  // Whatever the spec, the seeded rows x Lkv x D stay within the budget (or the two-row minimum).
  for (int64_t lkv : {1, 97, 1025, 65536, 1 << 20}) {
    s.seq_kv = lkv;
    const int64_t n = static_cast<int64_t>(accuracyRows(s, HostInputs{}, CheckDepth::sampled).size()) - 4 * 2;
    EXPECT_TRUE(n <= 2 || n * lkv * s.headDim() <= kAccuracyBudget) << lkv;
  }
}

TEST(ReferenceCheck, CancelStopsTheCheck) {
  const WorkloadSpec s = tiny();
  const HostInputs in = HostInputs::generate(s);
  std::atomic<bool> cancel{true};
  EXPECT_THROW(checkAccuracy(s, in, exactOutput(s, in), &cancel), Cancelled);
}
