// Both CPU backends against the float64 reference, over a combinatorial table of cases that
// together cover every mask kind and layout, every dtype, GQA and MQA, Lq != Lkv both ways and
// the awkward sizes (seq 1, 97, 1025; head_dim 1, 8, 59, 64, 128, 256, and 257, 320, 512 above the
// CUDA buckets). Additive masks in q's dtype and in fp32. Every case also holds
// the measured peak to the plan.

#include <gtest/gtest.h>

#include <set>

#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope {
namespace {

using cputest::Shape;
using cputest::specOf;

struct Case {
  const char* name;
  Shape shape;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " (" << summary(specOf(c.shape)) << ")"; }

constexpr DType f32 = DType::fp32, f16 = DType::fp16, b16 = DType::bf16;
constexpr MaskLayout bcast = MaskLayout::broadcast, per_head = MaskLayout::per_head;

// {batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, mask, layout, seed}
const Case kCases[] = {
    {"none_fp32_97_d64", {1, 2, 0, 97, 0, 64, f32, "none", bcast, 1}},
    {"none_fp16_gqa_lq97_lkv130_d59", {2, 4, 2, 97, 130, 59, f16, "none", bcast, 2}},
    {"none_bf16_mqa_lq130_lkv97_d8", {1, 4, 1, 130, 97, 8, b16, "none", bcast, 3}},
    {"none_fp32_seq1_d64", {1, 2, 0, 1, 0, 64, f32, "none", bcast, 4}},
    {"none_fp16_1025_d256", {1, 1, 0, 1025, 0, 256, f16, "none", bcast, 5}},
    {"none_fp32_lq1_lkv1025_d128", {1, 2, 1, 1, 1025, 128, f32, "none", bcast, 6}},
    {"causal_fp32_gqa_1025_d64", {1, 4, 2, 1025, 0, 64, f32, "causal", bcast, 7}},
    {"causal_fp16_lq97_lkv300_d128", {1, 2, 0, 97, 300, 128, f16, "causal", bcast, 8}},
    {"causal_bf16_lq300_lkv97_d8", {1, 2, 0, 300, 97, 8, b16, "causal", bcast, 9}},
    {"causal_fp32_97_d1", {2, 2, 0, 97, 0, 1, f32, "causal", bcast, 10}},
    {"causal_fp16_seq1", {1, 1, 0, 1, 0, 64, f16, "causal", bcast, 11}},
    {"causal_fp32_lq1025_lkv1", {1, 1, 0, 1025, 1, 8, f32, "causal", bcast, 12}},
    {"window16_fp32_lq64_lkv200_d59", {1, 2, 0, 64, 200, 59, f32, "window:16", bcast, 13}},
    {"window32_fp16_mqa_lq200_lkv64_d64", {1, 4, 1, 200, 64, 64, f16, "window:32", bcast, 14}},
    {"window300_bf16_1025_d128", {1, 1, 0, 1025, 0, 128, b16, "window:300", bcast, 15}},
    {"window4_bf16_lq1_lkv97_d256", {1, 1, 0, 1, 97, 256, b16, "window:4", bcast, 16}},
    {"window1_fp32_97_d59", {1, 2, 0, 97, 0, 59, f32, "window:1", bcast, 17}},
    {"block32_fp32_97_d256", {2, 2, 0, 97, 0, 256, f32, "block:32", bcast, 18}},
    {"block100_bf16_gqa_1025_d1", {1, 4, 2, 1025, 0, 1, b16, "block:100", bcast, 19}},
    {"block7_fp16_97_d8", {1, 2, 0, 97, 0, 8, f16, "block:7", bcast, 20}},
    {"dense1_fp32_97_d128", {1, 2, 0, 97, 0, 128, f32, "dense", bcast, 21}},
    {"dense05_fp16_lq97_lkv150_d64", {2, 2, 0, 97, 150, 64, f16, "dense:0.5", bcast, 22}},
    {"dense05_bf16_perhead_gqa_97_d59", {2, 4, 2, 97, 0, 59, b16, "dense:0.5", per_head, 23}},
    {"dense1_fp32_perhead_mqa_lq300_lkv97_d8", {1, 4, 1, 300, 97, 8, f32, "dense:1", per_head, 24}},
    {"dense05_fp32_1025_d64", {1, 2, 0, 1025, 0, 64, f32, "dense:0.5", bcast, 25}},
    {"dense002_fp32_perhead_lq97_lkv20_d1", {1, 2, 0, 97, 20, 1, f32, "dense:0.02", per_head, 26}},
    {"dense05_fp16_perhead_seq1_d256", {2, 2, 0, 1, 0, 256, f16, "dense:0.5", per_head, 27}},
    // Additive (float) masks, in q's dtype and in fp32, both layouts, p = 1 and 0.5.
    {"additive1_fp32_97_d64", {1, 2, 0, 97, 0, 64, f32, "additive", bcast, 28}},
    {"additive05_fp16_perhead_gqa_lq97_lkv150_d59_mfp32", {2, 4, 2, 97, 150, 59, f16, "additive:0.5", per_head, 29, f32}},
    {"additive05_bf16_perhead_mqa_lq130_lkv97_d8", {1, 4, 1, 130, 97, 8, b16, "additive:0.5", per_head, 30}},
    {"additive1_bf16_lq1_lkv1025_d128_mfp32", {1, 2, 0, 1, 1025, 128, b16, "additive", bcast, 31, f32}},
    {"additive05_fp16_1025_d256", {1, 1, 0, 1025, 0, 256, f16, "additive:0.5", bcast, 32}},
    {"additive002_fp32_perhead_lq97_lkv20_d1", {1, 2, 0, 97, 20, 1, f32, "additive:0.02", per_head, 33}},
    // head_dim above 256: 257, 320, 512 with every dtype and a few masks.
    {"none_fp32_97_d257", {1, 2, 0, 97, 0, 257, f32, "none", bcast, 34}},
    {"causal_fp16_lq97_lkv130_d320", {1, 2, 1, 97, 130, 320, f16, "causal", bcast, 35}},
    {"dense05_bf16_perhead_97_d512", {1, 2, 0, 97, 0, 512, b16, "dense:0.5", per_head, 36}},
    {"additive05_bf16_perhead_lq130_lkv97_d320_mfp32", {1, 2, 0, 130, 97, 320, b16, "additive:0.5", per_head, 37, f32}},
    {"additive1_fp32_lq300_lkv97_d512", {1, 2, 0, 300, 97, 512, f32, "additive", bcast, 38}},
    {"window33_fp16_1025_d257", {1, 1, 0, 1025, 0, 257, f16, "window:33", bcast, 39}},
    {"none_bf16_seq1_d512", {2, 2, 0, 1, 0, 512, b16, "none", bcast, 40}},
};

class CpuAccuracy : public ::testing::TestWithParam<std::tuple<int, Case>> {
 protected:
  static void SetUpTestSuite() { backends_ = cputest::cpuBackends(); }
  static void TearDownTestSuite() { backends_.clear(); }
  static std::vector<std::unique_ptr<Backend>> backends_;
};
std::vector<std::unique_ptr<Backend>> CpuAccuracy::backends_;

TEST_P(CpuAccuracy, MatchesFloat64ReferenceAndPlan) {
  const auto& [which, c] = GetParam();
  Backend& backend = *backends_[static_cast<size_t>(which)];
  const WorkloadSpec spec = specOf(c.shape);
  ASSERT_TRUE(validate(spec).empty()) << describe(validate(spec));
  ASSERT_TRUE(backend.support(spec).ok());
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 2;  // a second run must give the same answer from reused buffers
  const RunResult r = runPoint(backend, spec, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_TRUE(r.accuracy.passed()) << summary(spec) << ": max abs error " << r.accuracy.max_abs_error
                                   << " > " << r.accuracy.tolerance;
  EXPECT_EQ(r.accuracy.tolerance, toleranceFor(spec.dtype));
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << summary(spec);
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<int, Case>>& info) {
  return std::string(std::get<0>(info.param) == 0 ? "reference_" : "flash_") + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Cases, CpuAccuracy, ::testing::Combine(::testing::Values(0, 1), ::testing::ValuesIn(kCases)),
                         caseName);

// The table above is meant to cover every listed value; this keeps it honest when edited.
TEST(CpuAccuracyTable, CoversEveryRequiredValue) {
  std::set<std::string> masks;
  std::set<DType> dtypes;
  std::set<int64_t> seqs, dims;
  bool gqa = false, mqa = false, q_shorter = false, q_longer = false, window_q_shorter = false,
       window_q_longer = false, dense_p1 = false, dense_p05 = false, dense_bcast = false, dense_per_head = false;
  std::set<std::string> additive;  // "p1", "p05", "broadcast", "per_head", "mask fp32", "mask q"
  for (const Case& c : kCases) {
    const WorkloadSpec s = specOf(c.shape);
    masks.insert(std::string(toString(s.mask.kind)));
    dtypes.insert(s.dtype);
    seqs.insert(s.seq_q);
    seqs.insert(s.seqKv());
    dims.insert(s.headDim());
    gqa |= s.heads == 4 && s.kvHeads() == 2;
    mqa |= s.heads == 4 && s.kvHeads() == 1;
    q_shorter |= s.seq_q < s.seqKv();
    q_longer |= s.seq_q > s.seqKv();
    window_q_shorter |= s.mask.kind == MaskKind::window && s.seq_q < s.seqKv();
    window_q_longer |= s.mask.kind == MaskKind::window && s.seq_q > s.seqKv();
    if (s.mask.kind == MaskKind::dense) {
      dense_p1 |= s.mask.keep_prob == 1.0;
      dense_p05 |= s.mask.keep_prob == 0.5;
      dense_bcast |= s.mask_layout == MaskLayout::broadcast;
      dense_per_head |= s.mask_layout == MaskLayout::per_head;
    }
    if (s.mask.kind == MaskKind::additive) {
      if (s.mask.keep_prob == 1.0) additive.insert("p1");
      if (s.mask.keep_prob == 0.5) additive.insert("p05");
      additive.insert(std::string(toString(s.mask_layout)));
      additive.insert(s.mask_dtype ? "mask " + std::string(toString(*s.mask_dtype)) : "mask q");
      additive.insert("q " + std::string(toString(s.dtype)));
    }
  }
  EXPECT_EQ(masks, (std::set<std::string>{"none", "causal", "window", "block", "dense", "additive"}));
  EXPECT_EQ(dtypes, (std::set<DType>{DType::fp32, DType::fp16, DType::bf16}));
  for (int64_t seq : {1, 97, 1025}) EXPECT_TRUE(seqs.count(seq)) << seq;
  for (int64_t d : {1, 8, 59, 64, 128, 256, 257, 320, 512}) EXPECT_TRUE(dims.count(d)) << d;
  EXPECT_TRUE(gqa && mqa && q_shorter && q_longer && window_q_shorter && window_q_longer);
  EXPECT_EQ(additive, (std::set<std::string>{"p1", "p05", "broadcast", "per_head", "mask fp32", "mask q", "q fp32",
                                             "q fp16", "q bf16"}));
  EXPECT_TRUE(dense_p1 && dense_p05 && dense_bcast && dense_per_head);
}

}  // namespace
}  // namespace attnscope
