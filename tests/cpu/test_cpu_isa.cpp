// Both CPU backends with each kernel variant forced in turn (setCpuIsaOverride, as
// ATTNSCOPE_CPU_ISA does), against the float64 reference on the awkward sizes: seq 1, 97, 1025;
// head_dim 1, 8, 59, 64, 128, 256, 257, 320, 512; every mask kind (additive in q's dtype and fp32); GQA and MQA; every dtype. The measured peak
// must still equal the plan, whose tile sizes depend on the variant; and cpu.flash's backward
// (pass = train) on five of them per variant. Variants this CPU lacks are
// compiled but skipped, with a message.

#include <gtest/gtest.h>

#include <set>

#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/tile_kernels.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope {
namespace {

using cputest::Shape;
using cputest::specOf;
using cpu::CpuIsa;

struct Case {
  const char* name;
  Shape shape;
};

constexpr DType f32 = DType::fp32, f16 = DType::fp16, b16 = DType::bf16;
constexpr MaskLayout bcast = MaskLayout::broadcast, per_head = MaskLayout::per_head;

// {batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, mask, layout, seed}
const Case kCases[] = {
    {"none_fp32_seq1_d64", {1, 2, 0, 1, 0, 64, f32, "none", bcast, 1}},
    {"none_bf16_gqa_97_d59", {2, 4, 2, 97, 0, 59, b16, "none", bcast, 2}},
    {"none_fp16_1025_d128", {1, 1, 0, 1025, 0, 128, f16, "none", bcast, 3}},
    {"none_fp32_lq97_lkv1025_d256", {1, 1, 0, 97, 1025, 256, f32, "none", bcast, 4}},
    {"causal_fp32_mqa_1025_d64", {1, 4, 1, 1025, 0, 64, f32, "causal", bcast, 5}},
    {"causal_bf16_97_d1", {1, 2, 0, 97, 0, 1, b16, "causal", bcast, 6}},
    {"causal_fp16_lq1025_lkv97_d8", {1, 2, 0, 1025, 97, 8, f16, "causal", bcast, 7}},
    {"window33_fp16_97_d256", {1, 2, 0, 97, 0, 256, f16, "window:33", bcast, 8}},
    {"window300_fp32_1025_d59", {1, 1, 0, 1025, 0, 59, f32, "window:300", bcast, 9}},
    {"block64_bf16_gqa_1025_d128", {1, 4, 2, 1025, 0, 128, b16, "block:64", bcast, 10}},
    {"block7_fp32_seq1_d8", {1, 2, 0, 1, 0, 8, f32, "block:7", bcast, 11}},
    {"dense05_fp16_perhead_97_d64", {2, 2, 0, 97, 0, 64, f16, "dense:0.5", per_head, 12}},
    {"dense05_fp32_lq97_lkv300_d1", {1, 2, 0, 97, 300, 1, f32, "dense:0.5", bcast, 13}},
    {"dense1_bf16_perhead_mqa_1025_d8", {1, 4, 1, 1025, 0, 8, b16, "dense:1", per_head, 14}},
    // cpu.flash tasks of several score blocks whose key ranges differ (a block skips key tiles).
    {"window33_fp32_4h_1025_d64", {1, 4, 0, 1025, 0, 64, f32, "window:33", bcast, 15}},
    // head_dim above 256 (the products' k blocks of 256 split it; bf16 pairs at odd 257) and
    // additive masks (in q's dtype and in fp32; the bf16 pairs scale the bias by 1 / scale).
    {"none_bf16_97_d257", {1, 2, 0, 97, 0, 257, b16, "none", bcast, 16}},
    {"causal_fp32_lq97_lkv200_d320", {1, 2, 1, 97, 200, 320, f32, "causal", bcast, 17}},
    {"dense05_fp16_perhead_97_d512", {1, 2, 0, 97, 0, 512, f16, "dense:0.5", per_head, 18}},
    {"additive1_fp32_97_d64", {1, 2, 0, 97, 0, 64, f32, "additive", bcast, 19}},
    {"additive05_bf16_perhead_gqa_lq130_lkv97_d59", {2, 4, 2, 130, 97, 59, b16, "additive:0.5", per_head, 20}},
    {"additive05_bf16_lq97_lkv300_d512_mfp32", {1, 2, 0, 97, 300, 512, b16, "additive:0.5", bcast, 21, f32}},
    {"additive05_fp16_perhead_1025_d320", {1, 1, 0, 1025, 0, 320, f16, "additive:0.5", per_head, 22}},
    {"additive1_fp32_seq1_d257_mfp32", {1, 2, 0, 1, 0, 257, f32, "additive", bcast, 23, f32}},
};

// Forces a variant for one test and always restores the default.
struct ForcedIsa {
  explicit ForcedIsa(CpuIsa isa) { cpu::setCpuIsaOverride(isa); }
  ~ForcedIsa() { cpu::setCpuIsaOverride(std::nullopt); }
};

class CpuIsaAccuracy : public ::testing::TestWithParam<std::tuple<CpuIsa, int, Case>> {};

TEST_P(CpuIsaAccuracy, MatchesFloat64ReferenceAndPlan) {
  const auto& [isa, which, c] = GetParam();
  if (!cpu::cpuSupports(isa))
    GTEST_SKIP() << "variant " << cpu::toString(isa) << " is compiled but not run: this CPU lacks "
                 << cpu::cpuIsaMissing(isa) << " (CPU features: " << cpu::cpuFeatureList() << ")";
  ForcedIsa forced(isa);
  auto backends = cputest::cpuBackends(2);
  Backend& backend = *backends[static_cast<size_t>(which)];
  const WorkloadSpec spec = specOf(c.shape);
  ASSERT_TRUE(backend.support(spec).ok());
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  const RunResult r = runPoint(backend, spec, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_TRUE(r.accuracy.passed()) << cpu::toString(isa) << " " << summary(spec) << ": max abs error "
                                   << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << summary(spec);
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<CpuIsa, int, Case>>& info) {
  return std::string(cpu::toString(std::get<0>(info.param))) + (std::get<1>(info.param) == 0 ? "_reference_" : "_flash_") +
         std::get<2>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuIsaAccuracy,
                         ::testing::Combine(::testing::ValuesIn(cpu::kAllCpuIsas), ::testing::Values(0, 1),
                                            ::testing::ValuesIn(kCases)),
                         caseName);

// cpu.flash's backward (pass = train) with each variant forced: its products are the variant's
// fp32 tiles, or bf16 pairs where the variant has them; dQ, dK, dV against float64 and the plan.
const Case kTrainCases[] = {
    {"causal_fp32_gqa_97_d59", {2, 4, 2, 97, 0, 59, f32, "causal", bcast, 31}},
    {"none_bf16_lq65_lkv130_d128", {1, 2, 0, 65, 130, 128, b16, "none", bcast, 32}},
    {"window9_bf16_mqa_77_d1", {1, 4, 1, 77, 0, 1, b16, "window:9", bcast, 33}},
    {"dense05_fp16_perhead_97_d64", {1, 2, 0, 97, 0, 64, f16, "dense:0.5", per_head, 34}},
    {"additive05_bf16_perhead_gqa_33_d257_mfp32", {1, 4, 2, 33, 80, 257, b16, "additive:0.5", per_head, 35, f32}},
};

class CpuIsaTrain : public ::testing::TestWithParam<std::tuple<CpuIsa, Case>> {};

TEST_P(CpuIsaTrain, GradientsMatchFloat64ReferenceAndPlan) {
  const auto& [isa, c] = GetParam();
  if (!cpu::cpuSupports(isa))
    GTEST_SKIP() << "variant " << cpu::toString(isa) << " is compiled but not run: this CPU lacks "
                 << cpu::cpuIsaMissing(isa) << " (CPU features: " << cpu::cpuFeatureList() << ")";
  ForcedIsa forced(isa);
  auto backends = cputest::cpuBackends(2);
  WorkloadSpec spec = specOf(c.shape);
  spec.pass = Pass::train;
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  const RunResult r = runPoint(*backends[1], spec, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_TRUE(r.accuracy.passed()) << cpu::toString(isa) << " " << summary(spec) << ": max abs error "
                                   << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << summary(spec);
}

INSTANTIATE_TEST_SUITE_P(Variants, CpuIsaTrain,
                         ::testing::Combine(::testing::ValuesIn(cpu::kAllCpuIsas), ::testing::ValuesIn(kTrainCases)),
                         [](const ::testing::TestParamInfo<std::tuple<CpuIsa, Case>>& info) {
                           return std::string(cpu::toString(std::get<0>(info.param))) + "_" +
                                  std::get<1>(info.param).name;
                         });

TEST(CpuIsaAccuracyTable, CoversTheAwkwardSizes) {
  std::set<std::string> masks;
  std::set<DType> dtypes;
  std::set<int64_t> seqs, dims;
  bool gqa = false, mqa = false;
  for (const Case& c : kCases) {
    const WorkloadSpec s = specOf(c.shape);
    masks.insert(std::string(toString(s.mask.kind)));
    dtypes.insert(s.dtype);
    seqs.insert(s.seq_q);
    seqs.insert(s.seqKv());
    dims.insert(s.headDim());
    gqa |= s.kvHeads() > 1 && s.kvHeads() < s.heads;
    mqa |= s.kvHeads() == 1 && s.heads > 1;
  }
  EXPECT_EQ(masks, (std::set<std::string>{"none", "causal", "window", "block", "dense", "additive"}));
  EXPECT_EQ(dtypes, (std::set<DType>{f32, f16, b16}));
  for (int64_t seq : {1, 97, 1025}) EXPECT_TRUE(seqs.count(seq)) << seq;
  for (int64_t d : {1, 8, 59, 64, 128, 256, 257, 320, 512}) EXPECT_TRUE(dims.count(d)) << d;
  EXPECT_TRUE(gqa && mqa);
}

// A variant named in ATTNSCOPE_CPU_ISA that this CPU lacks, or no variant at all, makes the
// backends refuse every spec with a one-line reason; tested through the override-free path.
TEST(CpuIsaChoice, BackendsNameTheActiveKernels) {
  const std::string d = cpu::cpuKernelDescription();
  EXPECT_EQ(d.rfind("cpu kernels: ", 0), 0u) << d;
  ForcedIsa forced(CpuIsa::baseline);
  EXPECT_NE(cpu::cpuKernelDescription().find(cpu::tileKernels(CpuIsa::baseline).name), std::string::npos);
}

}  // namespace
}  // namespace attnscope
