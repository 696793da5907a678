// kind = layer on the CPU backends: y and every gradient against float64 (core/check/reference_layer.h)
// on awkward sizes (odd L, E not a multiple of 8, GQA and MQA, every mask kind, every dtype),
// forward and train with and without checkpointing, on this CPU's kernels and forced to the
// baseline ones; the plan names every allocation at its size and its peak is the measured one;
// the two backends agree; checkpointing frees cpu.reference's P; a wrong element anywhere fails.

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "core/check/reference.h"
#include "core/check/reference_layer.h"
#include "core/engine/run_engine.h"
#include "kernels/cpu/cpu_isa.h"
#include "tests/cpu/cpu_test_support.h"
#include "tests/support/corrupting_backend.h"
#include "tests/support/plan_buffers.h"

namespace attnscope {
namespace {

using cputest::Shape;

WorkloadSpec layerSpec(const Shape& shape, Pass pass = Pass::forward, Checkpoint checkpoint = Checkpoint::none) {
  WorkloadSpec s = cputest::specOf(shape);
  s.kind = WorkloadKind::layer;
  s.pass = pass;
  s.checkpoint = checkpoint;
  return s;
}

const std::pair<Pass, Checkpoint> kPasses[] = {
    {Pass::forward, Checkpoint::none}, {Pass::train, Checkpoint::none}, {Pass::train, Checkpoint::attention}};

// Forces the baseline kernels for the test's lifetime (the native ones otherwise).
struct Kernels {
  explicit Kernels(bool baseline) {
    if (baseline) cpu::setCpuIsaOverride(cpu::CpuIsa::baseline);
  }
  ~Kernels() { cpu::setCpuIsaOverride(std::nullopt); }
};

class CpuLayer : public ::testing::TestWithParam<std::tuple<Shape, bool>> {
 protected:
  std::vector<std::unique_ptr<Backend>> backends_ = cputest::cpuBackends(3);
};

TEST_P(CpuLayer, MatchesFloat64AndPeakMatchesPlan) {
  const auto& [shape, baseline] = GetParam();
  Kernels kernels(baseline);
  for (const auto& [pass, checkpoint] : kPasses) {
    const WorkloadSpec spec = layerSpec(shape, pass, checkpoint);
    ASSERT_TRUE(validate(spec).empty()) << describe(validate(spec));
    for (auto& b : backends_) {
      const std::string where = b->id() + " " + summary(spec) + (baseline ? " baseline" : " native");
      ASSERT_TRUE(b->support(spec).ok()) << where;
      RunOptions opt;
      opt.warmup = 1;  // a second pass must overwrite, not add to, the results
      opt.reps = 1;
      const RunResult r = runPoint(*b, spec, opt);
      ASSERT_EQ(r.status, RunStatus::ok) << where << ": " << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << where;
      EXPECT_LE(r.accuracy.max_abs_error, toleranceFor(spec.dtype)) << where;
      EXPECT_GT(r.accuracy.rows_checked, 0) << where;
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << where;
      EXPECT_EQ(r.plan.ioBytes(), r.memory.io_bytes) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuLayer,
    ::testing::Combine(
        ::testing::Values(Shape{1, 2, 0, 37, 0, 5, DType::fp32, "none", MaskLayout::broadcast, 1},
                          Shape{2, 4, 2, 33, 0, 3, DType::fp32, "causal", MaskLayout::broadcast, 2},
                          Shape{1, 3, 1, 50, 0, 7, DType::fp16, "window:9", MaskLayout::broadcast, 3},
                          Shape{1, 2, 0, 64, 0, 12, DType::bf16, "block:16", MaskLayout::broadcast, 4},
                          Shape{2, 2, 1, 29, 0, 9, DType::fp32, "dense:0.5", MaskLayout::per_head, 5},
                          Shape{1, 4, 0, 41, 0, 6, DType::fp16, "dense:0.3", MaskLayout::broadcast, 6},
                          Shape{1, 1, 0, 1, 0, 1, DType::bf16, "none", MaskLayout::broadcast, 7},
                          Shape{1, 2, 2, 130, 0, 20, DType::bf16, "causal", MaskLayout::broadcast, 8},
                          Shape{1, 2, 1, 300, 0, 64, DType::fp32, "causal", MaskLayout::broadcast, 9},
                          Shape{2, 2, 1, 29, 0, 9, DType::fp16, "additive:0.5", MaskLayout::per_head, 10, DType::fp32},
                          Shape{1, 2, 0, 45, 0, 8, DType::bf16, "additive", MaskLayout::broadcast, 11},
                          Shape{1, 1, 0, 33, 0, 320, DType::fp32, "additive:0.5", MaskLayout::broadcast, 12},
                          // bf16 past one chunk of the weight gradients' rows (256), an odd last
                          // chunk, an odd width: the bf16 pair products' edges.
                          Shape{1, 3, 1, 301, 0, 7, DType::bf16, "causal", MaskLayout::broadcast, 13}),
        ::testing::Bool()),
    [](const auto& info) {
      return "shape" + std::to_string(std::get<0>(info.param).seed) + (std::get<1>(info.param) ? "_baseline" : "_native");
    });

// Every planned buffer is allocated under its name at its size and nothing unplanned is, on
// layer points of every dtype and mask, both passes, both checkpoints (plan_buffers.h).
TEST(CpuLayerPlan, PlanIsWhatIsAllocated) {
  for (auto& b : cputest::cpuBackends(3)) {
    int checked = 0;
    for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
      for (const auto& [mask, layout] : plancheck::masks())
        for (const auto& [pass, checkpoint] : kPasses) {
          WorkloadSpec s = plancheck::spec(dtype, mask, layout);
          s.kind = WorkloadKind::layer;
          s.seq_kv = 0;
          s.seq_q = 45;
          s.head_dim = 11;  // E = 44
          s.pass = pass;
          s.checkpoint = checkpoint;
          checked += plancheck::expectPlanIsWhatIsAllocated(*b, s) ? 1 : 0;
        }
    EXPECT_EQ(checked, 36) << b->id();
  }
}

// The two backends run different attention algorithms in the same layer: they agree closely.
TEST(CpuLayerAgreement, ReferenceAndFlashAgree) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec spec =
      layerSpec({2, 4, 2, 70, 0, 16, DType::fp32, "causal", MaskLayout::broadcast, 9}, Pass::train);
  const HostInputs in = HostInputs::generate(spec);
  std::vector<float> y[2];
  LayerGradients g[2];
  for (int i = 0; i < 2; ++i) {
    auto alloc = backends[i]->makeAllocator();
    RunContext ctx(*alloc);
    auto exec = backends[i]->prepare(spec, in, ctx);
    exec->run();
    exec->output(y[i]);
    std::vector<LayerGradients> stack;
    ASSERT_TRUE(exec->layerGradients(stack));
    ASSERT_EQ(stack.size(), 1u);
    g[i] = stack.front();
  }
  auto worst = [](const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double w = 0;
    for (size_t e = 0; e < std::min(a.size(), b.size()); ++e) w = std::max(w, std::fabs(double(a[e]) - b[e]));
    return w;
  };
  EXPECT_LT(worst(y[0], y[1]), 1e-5);
  for (auto m : {&LayerGradients::dx, &LayerGradients::dw_qkv, &LayerGradients::db_qkv, &LayerGradients::dw_o,
                 &LayerGradients::db_o})
    EXPECT_LT(worst(g[0].*m, g[1].*m), 1e-4);
}

// cpu.flash's layer output, gradients and intermediate stages of `spec` on `in`.
struct LayerRun {
  std::vector<float> y;
  LayerGradients grads;
  LayerIntermediates mid;
};
LayerRun flashLayer(const WorkloadSpec& spec, const HostInputs& in) {
  auto backends = cputest::cpuBackends(2);
  auto alloc = backends[1]->makeAllocator();
  RunContext ctx(*alloc);
  ctx.setKeepIntermediates(true);
  LayerRun r;
  auto exec = backends[1]->prepare(spec, in, ctx);
  exec->run();
  exec->output(r.y);
  std::vector<LayerGradients> grads;
  std::vector<LayerIntermediates> mid;
  EXPECT_TRUE(exec->layerGradients(grads));
  EXPECT_TRUE(exec->layerIntermediates(mid));
  if (grads.size() == 1) r.grads = grads.front();
  if (mid.size() == 1) r.mid = mid.front();
  return r;
}

// Over the budget (B·L = 4200 rows > kAccuracyAllRows, each row's float64 cost well past what the
// budget affords) the layer check samples rows of y, dx and the weight gradients' rows; the last
// row of each (the sample's last) and a middle one near the end must still be held: an error
// planted there fails the check.
TEST(CpuLayerCheck, TheSampledCheckHoldsTheLastRowOfEveryTensor) {
  const WorkloadSpec spec = layerSpec({3, 4, 2, 1400, 0, 16, DType::fp32, "causal", MaskLayout::broadcast, 4}, Pass::train);
  const HostInputs in = HostInputs::generate(spec);
  const LayerRun run = flashLayer(spec, in);
  const std::vector<float>& y = run.y;
  const LayerGradients& grads = run.grads;
  const LayerIntermediates& mid = run.mid;
  const Accuracy ok = checkLayer(spec, in, y, &grads, &mid);
  ASSERT_TRUE(ok.passed()) << ok.max_abs_error;
  ASSERT_LT(ok.rows_checked, ok.rows_total) << "the shape must reach the sampled path";
  {
    std::vector<float> bad = y;
    bad[y.size() - 1] += 0.05f;  // the last row of the last batch
    EXPECT_FALSE(checkLayer(spec, in, bad, &grads, &mid).passed()) << "y's last row";
  }
  for (auto [member, name] : {std::pair{&LayerGradients::dx, "dx"}, std::pair{&LayerGradients::dw_qkv, "dw_qkv"},
                              std::pair{&LayerGradients::dw_o, "dw_o"}}) {
    LayerGradients bad = grads;
    (bad.*member).back() += 0.05f;
    EXPECT_FALSE(checkLayer(spec, in, y, &bad, &mid).passed()) << name << "'s last element";
  }
}

// The check is not vacuous: a wrong element of y, of any gradient or of any intermediate stage
// fails it and names the tensor; through the engine that is status wrong.
TEST(CpuLayerCheck, AWrongElementAnywhereFails) {
  const WorkloadSpec spec =
      layerSpec({2, 4, 2, 20, 0, 6, DType::fp32, "causal", MaskLayout::broadcast, 10}, Pass::train);
  const HostInputs in = HostInputs::generate(spec);
  const LayerRun run = flashLayer(spec, in);
  const std::vector<float>& y = run.y;
  const LayerGradients& grads = run.grads;
  const LayerIntermediates& mid = run.mid;
  auto backends = cputest::cpuBackends(2);
  ASSERT_TRUE(checkLayer(spec, in, y, &grads, &mid).passed());
  auto expectFails = [&](const std::vector<float>& yy, const LayerGradients& gg, const LayerIntermediates& mm,
                         const std::string& name) {
    std::string problem;
    const Accuracy a = checkLayer(spec, in, yy, &gg, &mm, nullptr, &problem);
    EXPECT_FALSE(a.passed()) << name;
    EXPECT_NE(problem.find(name), std::string::npos) << name << ": " << problem;
  };
  {
    std::vector<float> bad = y;
    bad[y.size() - 3] += 0.01f;  // the last row, last batch
    expectFails(bad, grads, mid, "y");
  }
  for (auto [member, name] : {std::pair{&LayerGradients::dx, "dx"}, std::pair{&LayerGradients::dw_qkv, "dw_qkv"},
                              std::pair{&LayerGradients::db_qkv, "db_qkv"}, std::pair{&LayerGradients::dw_o, "dw_o"},
                              std::pair{&LayerGradients::db_o, "db_o"}}) {
    for (size_t at : {size_t{0}, (grads.*member).size() / 2 + 1, (grads.*member).size() - 1}) {
      LayerGradients bad = grads;
      (bad.*member)[at] += 0.01f;
      expectFails(y, bad, mid, name);
    }
    // A NaN fails by the scan of every element, before (and whatever) the sampled rows hold.
    LayerGradients nan = grads;
    (nan.*member)[1] = NAN;
    expectFails(y, nan, mid, std::string(name) + " element 1 is not finite");
  }
  {
    std::vector<float> nan = y;
    nan[1] = NAN;
    expectFails(nan, grads, mid, "y element 1 is not finite");
  }
  for (auto [member, name] : {std::pair{&LayerIntermediates::q, "q/k/v"}, std::pair{&LayerIntermediates::v, "q/k/v"},
                              std::pair{&LayerIntermediates::o, "o"}, std::pair{&LayerIntermediates::d_o, "dO"},
                              std::pair{&LayerIntermediates::dk, "dk"}}) {
    LayerIntermediates bad = mid;
    HostTensor& t = bad.*member;
    t.set(t.elements() - 2, t.at(t.elements() - 2) + 0.01f);
    expectFails(y, grads, bad, name);
  }
  std::string problem;
  EXPECT_FALSE(checkLayer(spec, in, y, &grads, nullptr, nullptr, &problem).passed());
  EXPECT_NE(problem.find("intermediates"), std::string::npos) << problem;
  // Through the engine: a run without G is refused.
  HostInputs noG = in;
  noG.g = {};
  RunOptions opt;
  opt.inputs = &noG;
  EXPECT_EQ(runPoint(*backends[0], spec, opt).status, RunStatus::error);
}

// A CPU backend with one element of y or of a layer gradient changed.
testing::CorruptingBackend corrupting(Backend& inner, std::string tensor) {
  return testing::CorruptingBackend(inner, [tensor](testing::Results r) {
    if (r.out && tensor == "y") (*r.out)[r.out->size() / 3] += 0.05f;
    if (r.layer)
      for (auto [member, name] : {std::pair{&LayerGradients::dx, "dx"}, std::pair{&LayerGradients::dw_qkv, "dw_qkv"},
                                  std::pair{&LayerGradients::db_qkv, "db_qkv"}, std::pair{&LayerGradients::dw_o, "dw_o"},
                                  std::pair{&LayerGradients::db_o, "db_o"}})
        if (tensor == name) (r.layer->*member).back() += 0.05f;
  });
}

// Through the engine, a layer failing its check is status wrong, with the tensor named.
TEST(CpuLayerCheck, AWrongResultMakesTheRunWrong) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec spec =
      layerSpec({1, 2, 1, 24, 0, 8, DType::fp16, "none", MaskLayout::broadcast, 11}, Pass::train);
  for (const char* tensor : {"none", "y", "dx", "dw_qkv", "db_qkv", "dw_o", "db_o"}) {
    testing::CorruptingBackend bad = corrupting(*backends[0], tensor);
    RunOptions opt;
    opt.reps = 1;
    const RunResult r = runPoint(bad, spec, opt);
    if (std::string(tensor) == "none") {
      EXPECT_EQ(r.status, RunStatus::ok) << r.message;
      continue;
    }
    EXPECT_EQ(r.status, RunStatus::wrong) << tensor;
    EXPECT_NE(r.message.find(tensor), std::string::npos) << tensor << ": " << r.message;
  }
}

int64_t plannedAt(const MemoryPlan& p, const std::string& buffer, const std::string& step) {
  int s = -1;
  for (int i = 0; i < p.stepCount(); ++i)
    if (p.steps[i] == step) s = i;
  int64_t bytes = 0;
  for (const auto& b : p.buffers)
    if (b.name == buffer && b.first_step <= s && s <= b.last_step) bytes += b.bytes;
  return bytes;
}

// The layer's steps, and what checkpointing changes: cpu.reference's P is not held through the
// out projection and its backward.
TEST(CpuLayerMemory, StepsAndCheckpoint) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec none = layerSpec({1, 4, 0, 128, 0, 16, DType::fp32, "none", MaskLayout::broadcast, 1}, Pass::train);
  WorkloadSpec ckpt = none;
  ckpt.checkpoint = Checkpoint::attention;
  const MemoryPlan pn = backends[0]->plan(none), pc = backends[0]->plan(ckpt);
  EXPECT_EQ(pn.steps, (std::vector<std::string>{"inputs", "qkv_proj", "scores", "softmax", "pv", "out_proj",
                                                "out_proj_backward dO", "out_proj_backward dw_o", "backward dS",
                                                "backward dQ", "backward dK dV", "qkv_proj_backward dx",
                                                "qkv_proj_backward dw_qkv"}));
  const int64_t p_bytes = none.scoreElements() * 4;
  for (const char* step : {"out_proj", "out_proj_backward dO", "out_proj_backward dw_o"}) {
    EXPECT_EQ(plannedAt(pn, "P = softmax(S)", step), p_bytes) << step;
    EXPECT_EQ(plannedAt(pc, "P = softmax(S)", step), 0) << step;
  }
  EXPECT_EQ(plannedAt(pn, "P = softmax(S)", "qkv_proj_backward dx"), 0);
  EXPECT_EQ(plannedAt(pc, "P = softmax(S)", "backward dQ"), p_bytes);
  const std::vector<std::string> flash = backends[1]->plan(ckpt).steps;
  EXPECT_EQ(flash, (std::vector<std::string>{"inputs", "qkv_proj", "attention", "out_proj", "out_proj_backward dO",
                                             "out_proj_backward dw_o", "recompute attention", "backward",
                                             "qkv_proj_backward dx", "qkv_proj_backward dw_qkv"}));
  // The phases of a run are the plan's steps.
  RunOptions opt;
  opt.reps = 1;
  const RunResult r = runPoint(*backends[0], ckpt, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  std::set<std::string> phases;
  for (const TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::phase) phases.insert(e.name);
  for (const char* p : {"qkv_proj", "scores", "softmax", "pv", "out_proj", "out_proj_backward", "dO", "dw_o",
                        "recompute", "backward dS", "qkv_proj_backward", "dx", "dw_qkv"})
    EXPECT_TRUE(phases.count(p)) << p;
}

TEST(CpuLayerSupport, BothBackendsRunLayers) {
  for (auto& b : cputest::cpuBackends(1)) {
    WorkloadSpec s;
    s.kind = WorkloadKind::layer;
    EXPECT_TRUE(b->support(s).ok()) << b->id();
    s.seq_kv = 2 * s.seq_q;  // cross-attention is not a layer
    ASSERT_FALSE(b->support(s).ok());
    EXPECT_NE(b->support(s).reasons.front().find("seq_kv"), std::string::npos);
  }
}

}  // namespace
}  // namespace attnscope
