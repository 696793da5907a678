// compareSweeps: the pairing rule shared by `attnscope compare` and the GUI's Compare tab.
#include <gtest/gtest.h>

#include "core/export/sweep_compare.h"

using namespace attnscope;

namespace {

RunResult point(const std::string& backend, int64_t heads, int64_t seq, DType dtype, int64_t peak = 1000,
                double median = 1e-3, RunStatus status = RunStatus::ok) {
  RunResult r;
  r.backend = backend;
  r.spec.heads = heads;
  r.spec.seq_q = seq;
  r.spec.dtype = dtype;
  r.status = status;
  r.memory.measured_peak = status == RunStatus::ok ? peak : -1;
  r.memory.predicted_peak = peak;
  r.timing.median_s = median;
  return r;
}

std::vector<std::string> labels(const SweepComparison& c) {
  std::vector<std::string> out;
  for (const auto& p : c.points) out.push_back(p.label);
  return out;
}

}  // namespace

TEST(SweepCompare, Fp16AndBf16SweepsPairOnTheSweptFields) {
  std::vector<RunResult> a, b;
  for (int64_t h : {8, 4, 16, 2}) {  // out of order on purpose: sorted numerically, not as text
    a.push_back(point("cpu.flash", h, 1024, DType::fp16));
    b.push_back(point("cpu.flash", h, 1024, DType::bf16));
  }
  const SweepComparison c = compareSweeps({&a, &b});
  EXPECT_EQ(c.key_fields, std::vector<std::string>{"heads"});
  EXPECT_EQ(c.differing_fields, std::vector<std::string>{"dtype"});
  ASSERT_EQ(c.points.size(), 4u);
  EXPECT_EQ(labels(c), (std::vector<std::string>{"cpu.flash heads=2", "cpu.flash heads=4", "cpu.flash heads=8",
                                                 "cpu.flash heads=16"}));
  for (const auto& p : c.points) {
    ASSERT_NE(p.runs[0], nullptr);
    ASSERT_NE(p.runs[1], nullptr);
    EXPECT_EQ(p.runs[0]->spec.heads, p.runs[1]->spec.heads);
    EXPECT_EQ(p.runs[0]->spec.dtype, DType::fp16);
    EXPECT_EQ(p.runs[1]->spec.dtype, DType::bf16);
  }
}

TEST(SweepCompare, KvHeadsIsAKeyFieldSoPointsNeverOverwriteEachOther) {
  // Swept as --kv-heads 1,2,8 on the command line: the spec holds kv_heads, the key names it so.
  std::vector<RunResult> a;
  for (int64_t kv : {1, 2, 8}) {
    a.push_back(point("cpu.reference", 8, 256, DType::fp32));
    a.back().spec.kv_heads = kv;
  }
  const SweepComparison c = compareSweeps({&a, &a});
  EXPECT_EQ(c.key_fields, std::vector<std::string>{"kv_heads"});
  ASSERT_EQ(c.points.size(), 3u);
  EXPECT_EQ(c.points[0].label, "cpu.reference kv_heads=1");
  EXPECT_EQ(c.points[2].runs[0]->spec.kv_heads, 8);
  EXPECT_TRUE(c.differing_fields.empty());
}

TEST(SweepCompare, PointsInOnlyOneSweepAreKept) {
  std::vector<RunResult> a{point("cpu.flash", 2, 512, DType::fp32), point("cpu.flash", 4, 512, DType::fp32)};
  std::vector<RunResult> b{point("cpu.flash", 4, 512, DType::fp32), point("cpu.flash", 8, 512, DType::fp32)};
  const SweepComparison c = compareSweeps({&a, &b});
  ASSERT_EQ(c.points.size(), 3u);
  EXPECT_NE(c.points[0].runs[0], nullptr);
  EXPECT_EQ(c.points[0].runs[1], nullptr);  // heads 2 only in A
  EXPECT_NE(c.points[1].runs[0], nullptr);
  EXPECT_NE(c.points[1].runs[1], nullptr);
  EXPECT_EQ(c.points[2].runs[0], nullptr);  // heads 8 only in B
  EXPECT_EQ(c.points[2].runs[1]->spec.heads, 8);
}

TEST(SweepCompare, BackendsInOrderOfAppearanceAndSeveralKeyFields) {
  std::vector<RunResult> a;
  for (const char* backend : {"cpu.reference", "cpu.flash"})
    for (int64_t seq : {2048, 256})
      for (int64_t h : {16, 2}) a.push_back(point(backend, h, seq, DType::fp32));
  const SweepComparison c = compareSweeps({&a});
  EXPECT_EQ(c.key_fields, (std::vector<std::string>{"heads", "seq"}));
  ASSERT_EQ(c.points.size(), 8u);
  EXPECT_EQ(c.points[0].label, "cpu.reference heads=2 seq=256");
  EXPECT_EQ(c.points[1].label, "cpu.reference heads=2 seq=2048");
  EXPECT_EQ(c.points[3].label, "cpu.reference heads=16 seq=2048");
  EXPECT_EQ(c.points[4].label, "cpu.flash heads=2 seq=256");
}

TEST(SweepCompare, RatiosNeedTwoFinishedRuns) {
  std::vector<RunResult> a{point("cpu.flash", 2, 512, DType::fp32, 1000, 2e-3),
                           point("cpu.flash", 4, 512, DType::fp32, 1000, 2e-3)};
  std::vector<RunResult> b{point("cpu.flash", 2, 512, DType::fp32, 3000, 1e-3),
                           point("cpu.flash", 4, 512, DType::fp32, 3000, 1e-3, RunStatus::oom)};
  const SweepComparison c = compareSweeps({&a, &b});
  ASSERT_EQ(c.points.size(), 2u);
  EXPECT_DOUBLE_EQ(*peakRatio(c.points[0], 0, 1), 3.0);
  EXPECT_DOUBLE_EQ(*timeRatio(c.points[0], 0, 1), 0.5);
  EXPECT_FALSE(peakRatio(c.points[1], 0, 1));  // B ran out of memory
  EXPECT_FALSE(timeRatio(c.points[1], 0, 1));
  EXPECT_FALSE(peakRatio(c.points[0], 0, 5));  // no such sweep
}

TEST(SweepCompare, SingleRunsPairByBackendOnly) {
  std::vector<RunResult> a{point("cpu.flash", 8, 512, DType::fp16)};
  std::vector<RunResult> b{point("cpu.flash", 8, 1024, DType::bf16)};
  const SweepComparison c = compareSweeps({&a, &b});
  EXPECT_TRUE(c.key_fields.empty());
  EXPECT_EQ(c.differing_fields, (std::vector<std::string>{"seq", "dtype"}));
  ASSERT_EQ(c.points.size(), 1u);
  EXPECT_NE(c.points[0].runs[1], nullptr);
}
