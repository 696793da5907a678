// What a sampled accuracy check always holds (core/check/check_sample.h, accuracyRows): every
// batch-head and every query block, both edges of every mask, the largest |q| rows and the rows at
// risk; the mask ranges it walks agree with referenceAttends; and how `auto` picks full or
// sampled, and how coverage is shown.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "core/check/check_policy.h"
#include "core/check/check_sample.h"
#include "core/check/reference.h"
#include "core/result/run_result.h"
#include "core/spec/sweep_spec.h"
#include "tests/support/spec_builder.h"

using namespace attnscope;

namespace {

WorkloadSpec spec(int64_t b, int64_t h, int64_t lq, int64_t lkv, int64_t d, const char* mask = "none") {
  return test::specOf({.batch = b, .heads = h, .seq_q = lq, .seq_kv = lkv, .head_dim = d, .mask = mask, .seed = 0});
}

bool has(const std::vector<int64_t>& rows, int64_t r) { return std::binary_search(rows.begin(), rows.end(), r); }

}  // namespace

TEST(CheckSample, EveryBatchHeadAndEveryQueryBlockIsRepresented) {
  // 4 x 8 batch-heads of 1025 queries over 16384 keys: the seeded part alone is 64 rows.
  const WorkloadSpec s = spec(4, 8, 1025, 16384, 64);
  const std::vector<int64_t> rows = accuracyRows(s, HostInputs{}, CheckDepth::sampled);
  ASSERT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  ASSERT_LT(static_cast<int64_t>(rows.size()), s.batch * s.heads * s.seq_q / 8);
  std::set<std::pair<int64_t, int64_t>> blocks;
  for (int64_t r : rows) blocks.insert({r / s.seq_q, r % s.seq_q / kCheckBlock});
  const int64_t perHead = (s.seq_q + kCheckBlock - 1) / kCheckBlock;  // 17: the last holds only query 1024
  EXPECT_EQ(static_cast<int64_t>(blocks.size()), s.batch * s.heads * perHead);
  for (int64_t bh = 0; bh < s.batch * s.heads; ++bh) EXPECT_TRUE(has(rows, bh * s.seq_q + 1024)) << bh;
  EXPECT_TRUE(has(rows, 0));
  EXPECT_TRUE(has(rows, s.batch * s.heads * s.seq_q - 1));
  EXPECT_EQ(rows, accuracyRows(s, HostInputs{}, CheckDepth::sampled));  // seeded: the same every time
  EXPECT_EQ(static_cast<int64_t>(accuracyRows(s, HostInputs{}, CheckDepth::every_row).size()), s.batch * s.heads * s.seq_q);
}

TEST(CheckSample, TheLargestQRowsAndTheRowsAtRiskAreIn) {
  WorkloadSpec s = spec(2, 4, 2048, 2048, 32);
  HostInputs in = HostInputs::generate(s);
  const int64_t D = s.headDim();
  auto scaleRow = [&](int64_t row, float by) {
    for (int64_t d = 0; d < D; ++d) in.q.set(row * D + d, in.q.at(row * D + d) * by);
  };
  auto setRow = [&](int64_t row, float value) {
    for (int64_t d = 0; d < D; ++d) in.q.set(row * D + d, value);
  };
  // Rows 100..108 of batch-head 0 are the largest overall (|q| near sqrt(32), random rows reach
  // about 4); row 9000 is only the largest of its batch-head 4.
  for (int64_t r = 100; r < 109; ++r) setRow(r, -0.999f);
  setRow(9000, 0.99f);
  std::vector<int64_t> rows = accuracyRows(s, in, CheckDepth::sampled);
  for (int64_t r = 100; r < 108; ++r) EXPECT_TRUE(has(rows, r)) << r;
  EXPECT_TRUE(has(rows, 9000));
  // A row whose scores could reach 1e6 is at risk: float32 rounding alone could exceed 1e-4.
  scaleRow(12345, 4e4f);
  rows = accuracyRows(s, in, CheckDepth::sampled);
  EXPECT_TRUE(has(rows, 12345));
  // q scaled by 2e5 puts every row at risk: the sampled check becomes a full one.
  for (int64_t r = 0; r < s.batch * s.heads * s.seq_q; ++r) scaleRow(r, 2e5f);
  EXPECT_EQ(static_cast<int64_t>(accuracyRows(s, in, CheckDepth::sampled).size()), s.batch * s.heads * s.seq_q);
  EXPECT_TRUE(scoresAtRisk(106, DType::fp32));
  EXPECT_FALSE(scoresAtRisk(100, DType::fp32));
  EXPECT_TRUE(scoresAtRisk(NAN, DType::bf16));
}

TEST(CheckSample, BothEdgesOfEveryMaskAreInEveryBatchHead) {
  struct Case {
    const char* mask;
    int64_t lq, lkv;
    std::vector<int64_t> edges;  // query rows that must be held
  };
  for (const Case& c : {Case{"causal", 3000, 2000, {999, 1000, 2999}},  // the last row with no key, the first with one
                        Case{"window:100", 3000, 3000, {99, 100, 2999}},  // the window stops being clipped by key 0
                        Case{"block:256", 3000, 3000, {255, 256, 511, 512, 2815, 2816, 2999}}}) {
    const WorkloadSpec s = spec(2, 2, c.lq, c.lkv, 64, c.mask);
    const std::vector<int64_t> rows = accuracyRows(s, HostInputs{}, CheckDepth::sampled);
    for (int64_t bh = 0; bh < 4; ++bh)
      for (int64_t i : c.edges) EXPECT_TRUE(has(rows, bh * c.lq + i)) << c.mask << " head " << bh << " row " << i;
  }
  // Key edges (for dK, dV): a causal key seen by every row, the first seen by fewer, the last.
  const std::vector<int64_t> keys = maskEdges(spec(1, 1, 1000, 1500, 64, "causal"), true);
  for (int64_t j : {500, 501, 1499}) EXPECT_TRUE(std::count(keys.begin(), keys.end(), j)) << j;
  // A dense mask's edges: the row with the fewest visible keys and (the last of) those with the most.
  WorkloadSpec d = spec(1, 1, 50, 40, 8, "dense:0.5");
  std::vector<uint8_t> mask(50 * 40, 1);
  for (int64_t j = 0; j < 40; ++j) mask[static_cast<size_t>(17 * 40 + j)] = 0;
  EXPECT_EQ(denseMaskEdges(d, mask, 0, false), (std::vector<int64_t>{17, 49}));
}

// The ranges the sampler and the reference walk are exactly the keys referenceAttends lets
// through (and the rows that see a key), for every structured mask and shape.
TEST(CheckSample, MaskRangesAgreeWithReferenceAttends) {
  for (const char* m : {"none", "causal", "window:1", "window:5", "window:40", "block:1", "block:7", "block:32"})
    for (auto [lq, lkv] : {std::pair<int64_t, int64_t>{33, 33}, {17, 40}, {40, 17}, {1, 9}, {9, 1}}) {
      const MaskSpec mask = *parseMask(m).mask;
      if (mask.kind == MaskKind::block && lq != lkv) continue;
      for (int64_t i = 0; i < lq; ++i) {
        const IndexRange r = keysSeenBy(mask, i, lq, lkv);
        for (int64_t j = 0; j < lkv; ++j)
          ASSERT_EQ(!r.empty() && j >= r.lo && j <= r.hi, referenceAttends(mask, i, j, lq, lkv)) << m << " " << i << " " << j;
      }
      for (int64_t j = 0; j < lkv; ++j) {
        const IndexRange r = rowsSeeing(mask, j, lq, lkv);
        for (int64_t i = 0; i < lq; ++i)
          ASSERT_EQ(!r.empty() && i >= r.lo && i <= r.hi, referenceAttends(mask, i, j, lq, lkv)) << m << " key " << j;
      }
    }
}

TEST(CheckPolicy, AutoIsFullWhereTheCheckCostsAboutTheRun) {
  const WorkloadSpec s = spec(1, 8, 1024, 1024, 64);
  const double seconds = fullCheckProducts(s) / kCheckProductsPerSecond;  // on one thread
  EXPECT_EQ(resolveCheck(s, CheckMode::automatic, seconds * 1.01, 1), CheckDepth::every_row);
  EXPECT_EQ(resolveCheck(s, CheckMode::automatic, seconds * 0.99, 1), CheckDepth::sampled);
  EXPECT_EQ(resolveCheck(s, CheckMode::automatic, seconds * 0.51, 2), CheckDepth::every_row);
  EXPECT_EQ(resolveCheck(s, CheckMode::full, 0, 1), CheckDepth::every_row);
  EXPECT_EQ(resolveCheck(s, CheckMode::sampled, 1e9, 1), CheckDepth::sampled);
  // A small check is full whatever the run took.
  EXPECT_EQ(resolveCheck(spec(1, 2, 64, 64, 16), CheckMode::automatic, 0, 1), CheckDepth::every_row);
  // A train check costs more than its forward.
  WorkloadSpec t = s;
  t.pass = Pass::train;
  EXPECT_GT(fullCheckProducts(t), 4 * fullCheckProducts(s));
}

TEST(CheckPolicy, CoverageIsShownWhereverOkIs) {
  RunResult r;
  r.accuracy.checked = true;
  r.accuracy.rows_total = 75776;
  r.accuracy.rows_checked = 1576;
  EXPECT_EQ(statusText(r), "ok, checked 2 % of rows");
  r.accuracy.rows_checked = 75775;  // never rounded up to all of them
  EXPECT_EQ(statusText(r), "ok, checked 99 % of rows");
  r.accuracy.rows_checked = 30;
  EXPECT_EQ(statusText(r), "ok, checked 0.04 % of rows");
  r.accuracy.rows_checked = 75776;
  EXPECT_EQ(statusText(r), "ok");
  r.accuracy.checked = false;
  EXPECT_EQ(statusText(r), "ok, not checked");
  EXPECT_EQ(r.accuracy.checkedFraction(), 0);
  r.status = RunStatus::wrong;
  EXPECT_EQ(statusText(r), "wrong");
}

TEST(CheckPolicy, TheSweepStoresItsMode) {
  for (auto m : {CheckMode::automatic, CheckMode::full, CheckMode::sampled, CheckMode::off}) {
    SweepSpec sw;
    sw.check = m;
    EXPECT_EQ(sweepSpecFromJson(toJson(sw)).check, m);
    EXPECT_EQ(parseCheckMode(toString(m)), m);
  }
  nlohmann::json old = toJson(SweepSpec{});
  old.erase("check");  // saved before the modes: auto
  EXPECT_EQ(sweepSpecFromJson(old).check, CheckMode::automatic);
  old["check"] = "most";
  try {
    (void)sweepSpecFromJson(old);
    ADD_FAILURE() << "an unknown mode was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'check' must be one of auto, full, sampled, off"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(parseCheckMode("Full"));
}
