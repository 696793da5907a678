// The CUDA backends' plans, buffer by buffer, against sizes computed here from the spec alone
// (elements x bytes per element), for every dtype, mask layout and chunking. The executions
// allocate from the same functions as the plans, so a size wrong in both would go unseen by a
// plan-versus-trace check; this one holds them to the arithmetic. Host logic: no device needed.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kernels/cuda/cuda_plans.h"
#include "tests/support/spec_builder.h"

namespace attnscope::cuda {
namespace {

std::map<std::string, int64_t> byName(const MemoryPlan& p) {
  std::map<std::string, int64_t> out;
  for (const PlannedBuffer& b : p.buffers) EXPECT_TRUE(out.emplace(b.name, b.bytes).second) << "twice: " << b.name;
  return out;
}

TEST(CudaPlanSizes, EveryBufferIsItsElementsTimesItsElementSize) {
  for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
    for (const char* mask : {"none", "causal", "dense:0.5"})
      for (MaskLayout layout : {MaskLayout::broadcast, MaskLayout::per_head}) {
        const WorkloadSpec s = test::specOf({.batch = 3, .heads = 6, .kv_heads = 2, .seq_q = 50, .seq_kv = 70, .head_dim = 40,
                                             .dtype = dtype, .mask = mask, .layout = layout});
        const int64_t e = dtype == DType::fp32 ? 4 : 2;
        const bool dense = s.mask.kind == MaskKind::dense;
        const int64_t maskBytes = dense ? (layout == MaskLayout::per_head ? 3 * 6 : 1) * 50 * 70 : 0;
        const std::string where = summary(s);
        for (int64_t rows : {int64_t{50}, int64_t{7}}) {
          const auto p = byName(planMaterialising(s, rows));
          const std::string per = rows == 50 ? "" : " (chunk of 7 rows)";
          EXPECT_EQ(p.at("q"), 3 * 6 * 50 * 40 * e) << where;
          EXPECT_EQ(p.at("o"), 3 * 6 * 50 * 40 * e) << where;
          EXPECT_EQ(p.at("k"), 3 * 2 * 70 * 40 * e) << where;
          EXPECT_EQ(p.at("v"), 3 * 2 * 70 * 40 * e) << where;
          EXPECT_EQ(p.at("scores S" + per), 3 * 6 * rows * 70 * e) << where << per;
          EXPECT_EQ(p.at("probs P" + per), 3 * 6 * rows * 70 * e) << where << per;
          EXPECT_EQ(p.at("cublas workspace"), int64_t{32} << 20);
          EXPECT_EQ(p.count("mask") ? p.at("mask") : 0, maskBytes) << where;
          const int64_t planes = layout == MaskLayout::per_head ? 3 * 6 : 1;
          EXPECT_EQ(p.count("additive mask" + per) ? p.at("additive mask" + per) : 0, dense ? planes * rows * 70 * e : 0)
              << where << per;
          EXPECT_EQ(p.size(), dense ? 9u : 7u) << where;
        }
        const auto f = byName(planFlash(s));
        EXPECT_EQ(f.at("q"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(f.at("o"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(f.at("k"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(f.at("v"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(f.at("log-sum-exp"), 3 * 6 * 50 * 4) << where;
        EXPECT_EQ(f.count("mask") ? f.at("mask") : 0, maskBytes) << where;
        EXPECT_EQ(f.size(), dense ? 6u : 5u) << where;

        // pass = train: G and the gradients in the input type, cuda.math's dS like its scores.
        WorkloadSpec t = s;
        t.pass = Pass::train;
        const auto mt = byName(planMathTrain(t));
        EXPECT_EQ(mt.at("g"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(mt.at("dq"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(mt.at("dk"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(mt.at("dv"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(mt.at("dS = P * (dP - delta)"), 3 * 6 * 50 * 70 * e) << where;
        EXPECT_EQ(mt.at("probs P"), 3 * 6 * 50 * 70 * e) << where;
        EXPECT_EQ(mt.size(), dense ? 14u : 12u) << where;
        const auto ft = byName(planFlashTrain(t));
        EXPECT_EQ(ft.at("g"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(ft.at("dq"), 3 * 6 * 50 * 40 * e) << where;
        EXPECT_EQ(ft.at("dk"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(ft.at("dv"), 3 * 2 * 70 * 40 * e) << where;
        EXPECT_EQ(ft.at("log-sum-exp"), 3 * 6 * 50 * 4) << where;
        EXPECT_EQ(ft.size(), dense ? 10u : 9u) << where;
      }
}

}  // namespace
}  // namespace attnscope::cuda
