// pass = train on the CPU backends: dQ, dK, dV of loss = sum(O * G) against the float64
// reference on awkward sizes (odd lengths, Lq != Lkv, GQA, every mask kind, every dtype), with
// and without checkpointing; the plan names what is allocated and its peak is the measured one;
// checkpointing takes the saved P out of cpu.reference's forward; and a wrong gradient fails.

#include <gtest/gtest.h>

#include <cmath>

#include "core/check/reference.h"
#include "core/check/check_sample.h"
#include "core/check/reference_grad.h"
#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"
#include "tests/support/gradient_agreement.h"

namespace attnscope {
namespace {

using cputest::Shape;
using cputest::specOf;

WorkloadSpec trainSpec(const Shape& shape, Checkpoint checkpoint = Checkpoint::none) {
  WorkloadSpec s = specOf(shape);
  s.pass = Pass::train;
  s.checkpoint = checkpoint;
  return s;
}

RunResult runChecked(Backend& backend, const WorkloadSpec& spec) {
  RunOptions opt;
  opt.warmup = 1;  // a second pass must overwrite, not add to, the gradients
  opt.reps = 1;
  return runPoint(backend, spec, opt);
}

class CpuTrain : public ::testing::TestWithParam<Shape> {
 protected:
  std::vector<std::unique_ptr<Backend>> backends_ = cputest::cpuBackends(3);
};

TEST_P(CpuTrain, GradientsMatchFloat64AndPeakMatchesPlan) {
  for (Checkpoint c : {Checkpoint::none, Checkpoint::attention}) {
    const WorkloadSpec spec = trainSpec(GetParam(), c);
    for (auto& b : backends_) {
      const std::string where = b->id() + " " + summary(spec) + " checkpoint " + std::string(toString(c));
      const RunResult r = runChecked(*b, spec);
      ASSERT_EQ(r.status, RunStatus::ok) << where << ": " << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << where;
      EXPECT_LE(r.accuracy.max_abs_error, toleranceFor(spec.dtype)) << where;
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << where;
      EXPECT_EQ(r.plan.ioBytes(), r.memory.io_bytes) << where;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuTrain,
    ::testing::Values(Shape{1, 2, 0, 97, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1},
                      Shape{2, 4, 2, 33, 80, 59, DType::fp32, "causal", MaskLayout::broadcast, 2},
                      Shape{1, 4, 1, 130, 0, 32, DType::fp16, "window:17", MaskLayout::broadcast, 3},
                      Shape{1, 2, 0, 150, 0, 16, DType::bf16, "block:40", MaskLayout::broadcast, 4},
                      Shape{2, 2, 1, 70, 45, 24, DType::fp32, "dense:0.5", MaskLayout::per_head, 5},
                      Shape{1, 3, 0, 129, 0, 8, DType::fp16, "dense:0.3", MaskLayout::broadcast, 6},
                      Shape{1, 1, 0, 1, 0, 1, DType::bf16, "none", MaskLayout::broadcast, 7},
                      Shape{1, 2, 0, 200, 300, 64, DType::fp32, "causal", MaskLayout::broadcast, 8},
                      // Lq > Lkv causal: the first rows see no key (zero output, zero dQ).
                      Shape{1, 2, 1, 90, 40, 16, DType::fp16, "causal", MaskLayout::broadcast, 9},
                      Shape{2, 2, 0, 77, 150, 40, DType::bf16, "window:9", MaskLayout::broadcast, 10},
                      // Additive masks: the bias enters the backward's recomputed P too.
                      Shape{1, 2, 0, 97, 0, 64, DType::fp32, "additive", MaskLayout::broadcast, 11},
                      Shape{2, 4, 2, 70, 45, 24, DType::fp16, "additive:0.5", MaskLayout::per_head, 12, DType::fp32},
                      Shape{1, 2, 1, 33, 80, 59, DType::bf16, "additive:0.5", MaskLayout::broadcast, 13},
                      Shape{1, 2, 0, 40, 20, 8, DType::fp32, "additive:0.05", MaskLayout::per_head, 14},
                      // head_dim above 256.
                      Shape{1, 2, 0, 65, 0, 257, DType::fp32, "causal", MaskLayout::broadcast, 15},
                      Shape{1, 1, 0, 40, 70, 512, DType::bf16, "additive:0.5", MaskLayout::per_head, 16, DType::fp32},
                      Shape{1, 2, 1, 50, 0, 320, DType::fp16, "dense:0.5", MaskLayout::broadcast, 17}));

// The two backends compute the same gradients by different algorithms: they agree closely.
TEST(CpuTrainAgreement, ReferenceAndFlashAgree) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec spec = trainSpec({1, 4, 2, 190, 0, 64, DType::fp32, "causal", MaskLayout::broadcast, 9});
  attnscope::testing::expectGradientsAgree(*backends[0], *backends[1], spec, 1e-4);
}

TEST(CpuTrainAgreement, ReferenceAndFlashAgreeUnderAnAdditiveMask) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec spec =
      trainSpec({2, 4, 2, 130, 0, 48, DType::fp32, "additive:0.5", MaskLayout::per_head, 18});
  attnscope::testing::expectGradientsAgree(*backends[0], *backends[1], spec, 1e-4);
}

// The check is not vacuous: one wrong element of any gradient, or a NaN, fails it and is named.
// cpu.flash's gradients of `spec` on `in` (the check's subject in the tests below).
AttentionGradients flashGradients(const WorkloadSpec& spec, const HostInputs& in) {
  auto backends = cputest::cpuBackends(2);
  auto alloc = backends[1]->makeAllocator();
  RunContext ctx(*alloc);
  AttentionGradients g;
  auto exec = backends[1]->prepare(spec, in, ctx);
  exec->run();
  EXPECT_TRUE(exec->gradients(g));
  return g;
}

// cpu.flash's backward sums in one fixed order whatever the threads: 1, 2 and 3 workers give the
// same bits, with GQA (dK, dV summed over a group's heads) and without, in fp32 and bf16.
TEST(CpuTrainFlash, GradientsDoNotDependOnTheThreads) {
  for (const Shape& shape : {Shape{2, 6, 2, 150, 0, 24, DType::bf16, "causal", MaskLayout::broadcast, 4},
                             Shape{1, 3, 0, 97, 140, 40, DType::fp32, "dense:0.5", MaskLayout::per_head, 5}}) {
    const WorkloadSpec spec = trainSpec(shape);
    const HostInputs in = HostInputs::generate(spec);
    std::vector<AttentionGradients> got;
    for (int threads : {1, 2, 3}) {
      auto backends = cputest::cpuBackends(threads);
      auto alloc = backends[1]->makeAllocator();
      RunContext ctx(*alloc);
      auto exec = backends[1]->prepare(spec, in, ctx);
      exec->run();
      ASSERT_TRUE(exec->gradients(got.emplace_back()));
    }
    for (size_t i = 1; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dq, got[0].dq) << summary(spec) << ": dq with " << i + 1 << " threads";
      EXPECT_EQ(got[i].dk, got[0].dk) << summary(spec) << ": dk with " << i + 1 << " threads";
      EXPECT_EQ(got[i].dv, got[0].dv) << summary(spec) << ": dv with " << i + 1 << " threads";
    }
  }
}

TEST(CpuTrainCheck, AWrongGradientFails) {
  const WorkloadSpec spec = trainSpec({1, 2, 1, 40, 50, 16, DType::fp32, "causal", MaskLayout::broadcast, 10});
  const HostInputs in = HostInputs::generate(spec);
  const AttentionGradients good = flashGradients(spec, in);
  auto backends = cputest::cpuBackends(2);
  ASSERT_TRUE(checkGradients(spec, in, good).passed());
  struct Case {
    std::vector<float> AttentionGradients::*member;
    size_t at;
    float value;
    const char* name;
  };
  for (const Case& c : {Case{&AttentionGradients::dq, 17, 0.01f, "dq"}, Case{&AttentionGradients::dk, 3, 0.01f, "dk"},
                        Case{&AttentionGradients::dv, 16 * 49 + 2, 0.01f, "dv"},
                        Case{&AttentionGradients::dk, 5, NAN, "dk"}}) {
    AttentionGradients bad = good;
    (bad.*c.member)[c.at] += std::isnan(c.value) ? c.value : c.value + 0.0f;
    std::string problem;
    const Accuracy a = checkGradients(spec, in, bad, nullptr, &problem);
    EXPECT_FALSE(a.passed()) << c.name;
    EXPECT_NE(problem.find(c.name), std::string::npos) << problem;
  }
  // Through the engine a failed gradient check is status wrong: a missing G is refused first.
  HostInputs noG = in;
  noG.g = {};
  RunOptions opt;
  opt.inputs = &noG;
  EXPECT_EQ(runPoint(*backends[0], spec, opt).status, RunStatus::error);
}

// Over the budget (each KV head's float64 forward over its group of 2 query heads costs
// 2·Lq·Lkv·D·2 = 282M products > 2^26) the gradient check samples KV heads, keys and query rows. What it must always hold, whatever the
// seed: the last KV head, the last key and the last query row (the sample's first and last), and
// the documented tolerance. An error planted in each of them fails the check.
TEST(CpuTrainCheck, TheSampledCheckHoldsTheLastHeadKeyAndRowAndTheDocumentedTolerance) {
  const WorkloadSpec spec = trainSpec({1, 4, 2, 1000, 1100, 64, DType::fp32, "none", MaskLayout::broadcast, 5});
  const HostInputs in = HostInputs::generate(spec);
  const AttentionGradients good = flashGradients(spec, in);
  const Accuracy ok = checkGradients(spec, in, good);
  ASSERT_TRUE(ok.passed()) << ok.max_abs_error;
  ASSERT_LT(ok.rows_checked, ok.rows_total) << "the shape must reach the sampled path";
  EXPECT_EQ(ok.tolerance, 1e-4);  // docs/USER_GUIDE.md: fp32 1e-4 (fp16 4e-3, bf16 3e-2)
  // dK/dV sum over the group: an error in the last KV head's keys must be seen through both of
  // its query heads' contributions; dq's last row is query head 3's.
  const int64_t D = 64, Lq = 1000, Lkv = 1100, lastHead = 1, lastQueryHead = 3;
  struct Case {
    std::vector<float> AttentionGradients::*member;
    int64_t at;
    const char* name;
  };
  for (const Case& c : {Case{&AttentionGradients::dk, ((lastHead * Lkv) + Lkv - 1) * D + 3, "dk"},
                        Case{&AttentionGradients::dv, ((lastHead * Lkv) + Lkv - 1) * D + 60, "dv"},
                        Case{&AttentionGradients::dq, ((lastQueryHead * Lq) + Lq - 1) * D + 7, "dq"}}) {
    AttentionGradients bad = good;
    (bad.*c.member)[static_cast<size_t>(c.at)] += 0.05f;
    std::string problem;
    const Accuracy a = checkGradients(spec, in, bad, nullptr, &problem);
    EXPECT_FALSE(a.passed()) << c.name << " at " << c.at << ": the sampled check missed it (error " << a.max_abs_error << ")";
  }
  // The tolerance is the dtype's documented one at every dtype (a looser one would pass more).
  for (auto [dt, tol] : {std::pair{DType::fp16, 4e-3}, std::pair{DType::bf16, 3e-2}}) {
    WorkloadSpec small = trainSpec({1, 1, 0, 8, 8, 8, dt, "none", MaskLayout::broadcast, 1});
    const HostInputs sin = HostInputs::generate(small);
    AttentionGradients zero;
    zero.dq.assign(static_cast<size_t>(small.qElements()), 0.0f);
    zero.dk.assign(static_cast<size_t>(small.kvElements()), 0.0f);
    zero.dv.assign(static_cast<size_t>(small.kvElements()), 0.0f);
    EXPECT_EQ(checkGradients(small, sin, zero).tolerance, tol) << toString(dt);
  }
}

// Over budget, the dK/dV check holds every KV head whose scores are at risk (|scale q k| near the
// dtype's limit of what float32 softmax keeps exact), not only the first, the last, the
// kCheckLargest largest by each norm and a seeded few. Of 32 KV heads, 0..9 get the largest q,
// 10..19 the largest k, 24..31 the largest g and v, none of them at risk; 20..23 get q and k large
// together (at risk) but are never the largest by any one norm, so only the risk rule (or a seeded
// pick) reaches them: an error planted in each of their dK must fail the check.
TEST(CpuTrainCheck, TheSampledCheckHoldsEveryKvHeadWhoseScoresAreAtRisk) {
  const int64_t H = 32, L = 400, D = 64;
  const WorkloadSpec spec = trainSpec({1, H, H, L, 0, D, DType::fp32, "none", MaskLayout::broadcast, 11});
  HostInputs in = HostInputs::generate(spec);
  auto scaleHead = [&](HostTensor& t, int64_t head, float by) {
    for (int64_t i = head * L * D; i < (head + 1) * L * D; ++i) t.set(i, t.at(i) * by);
  };
  for (int64_t h = 0; h < 10; ++h) scaleHead(in.q, h, 8.0f);
  for (int64_t h = 10; h < 20; ++h) scaleHead(in.k, h, 8.0f);
  for (int64_t h = 20; h < 24; ++h) {
    scaleHead(in.q, h, 6.0f);
    scaleHead(in.k, h, 6.0f);
  }
  for (int64_t h = 24; h < 32; ++h) {
    scaleHead(in.g, h, 2.0f);
    scaleHead(in.v, h, 2.0f);
  }
  const double scale = spec.effectiveScale();
  auto largestRow = [&](const HostTensor& t, int64_t head) {
    double best = 0;
    for (int64_t r = 0; r < L; ++r) {
      double n = 0;
      for (int64_t d = 0; d < D; ++d) n += double(t.at((head * L + r) * D + d)) * t.at((head * L + r) * D + d);
      best = std::max(best, std::sqrt(n));
    }
    return best;
  };
  for (int64_t h = 0; h < H; ++h)  // the premise: exactly 20..23 at risk
    ASSERT_EQ(scoresAtRisk(scale * largestRow(in.q, h) * largestRow(in.k, h), spec.dtype), h >= 20 && h < 24) << "head " << h;
  const AttentionGradients good = flashGradients(spec, in);
  const Accuracy ok = checkGradients(spec, in, good);
  ASSERT_TRUE(ok.passed()) << ok.max_abs_error;
  ASSERT_LT(ok.rows_checked, ok.rows_total) << "the shape must reach the sampled path";
  for (int64_t h = 20; h < 24; ++h) {
    AttentionGradients bad = good;
    bad.dk[static_cast<size_t>((h * L + L / 2) * D + 5)] += 0.05f;
    EXPECT_FALSE(checkGradients(spec, in, bad).passed()) << "an error in dK of KV head " << h << ", whose scores are at risk, passed";
  }
}

// The sampled check also holds the mask's key edges (where the rows that see a key change their
// step: a window's clipped end, a block's bounds), whatever the seed picks: an error planted in dK
// at each edge key of the last KV head fails it.
TEST(CpuTrainCheck, TheSampledCheckHoldsTheMasksKeyEdges) {
  const WorkloadSpec spec = trainSpec({1, 4, 2, 1100, 0, 64, DType::fp32, "window:300", MaskLayout::broadcast, 6});
  const HostInputs in = HostInputs::generate(spec);
  const AttentionGradients good = flashGradients(spec, in);
  const Accuracy ok = checkGradients(spec, in, good);
  ASSERT_TRUE(ok.passed()) << ok.max_abs_error;
  ASSERT_LT(ok.rows_checked, ok.rows_total) << "the shape must reach the sampled path";
  const std::vector<int64_t> edges = maskEdges(spec, true);
  ASSERT_FALSE(edges.empty());
  const int64_t D = 64, Lkv = 1100, lastHead = 1;
  for (int64_t key : edges) {
    AttentionGradients bad = good;
    bad.dk[static_cast<size_t>((lastHead * Lkv + key) * D + 1)] += 0.05f;
    EXPECT_FALSE(checkGradients(spec, in, bad).passed()) << "an error in dK at edge key " << key << " passed";
  }
}

int64_t plannedAt(const MemoryPlan& p, const std::string& buffer, const std::string& step) {
  int s = -1;
  for (int i = 0; i < p.stepCount(); ++i)
    if (p.steps[i] == step) s = i;
  for (const auto& b : p.buffers)
    if (b.name == buffer && b.first_step <= s && s <= b.last_step) return b.bytes;
  return 0;
}

// checkpoint = attention frees cpu.reference's P at the end of the forward and recomputes it for
// the backward; without it P stays live from the forward's softmax to the backward's last step.
// (For kind attention the backward's P + dS make the peak either way: the plan says so too.)
TEST(CpuTrainMemory, CheckpointFreesPAfterTheForward) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec none = trainSpec({1, 4, 0, 256, 0, 32, DType::fp32, "none", MaskLayout::broadcast, 1});
  WorkloadSpec ckpt = none;
  ckpt.checkpoint = Checkpoint::attention;
  const int64_t p_bytes = none.scoreElements() * 4;
  const MemoryPlan pn = backends[0]->plan(none), pc = backends[0]->plan(ckpt);
  auto lifetimes = [](const MemoryPlan& p) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& b : p.buffers)
      if (b.name == "P = softmax(S)") out.emplace_back(p.steps[b.first_step], p.steps[b.last_step]);
    return out;
  };
  using Life = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(lifetimes(pn), (Life{{"softmax", "backward dK dV"}}));
  EXPECT_EQ(lifetimes(pc), (Life{{"softmax", "pv"}, {"recompute softmax", "backward dK dV"}}));
  EXPECT_EQ(plannedAt(pn, "dS = P * (dP - delta)", "backward dK dV"), p_bytes);
  EXPECT_EQ(plannedAt(pc, "P = softmax(S)", "recompute scores"), 0);
  EXPECT_EQ(plannedAt(pn, "P = softmax(S)", "backward dQ"), p_bytes);
  for (const WorkloadSpec* s : {&none, static_cast<const WorkloadSpec*>(&ckpt)}) {
    const RunResult r = runChecked(*backends[0], *s);
    ASSERT_EQ(r.status, RunStatus::ok) << r.message;
    EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak);
  }
  // cpu.flash saves only O and lse: nothing of size Lq x Lkv in any step.
  for (const auto& b : backends[1]->plan(none).buffers)
    if (b.role == BufferRole::workspace) {
      EXPECT_LT(b.bytes, p_bytes) << b.name;
    }
}

TEST(CpuTrainSupport, RefusesWhatItDoesNotCompute) {
  auto backends = cputest::cpuBackends(1);
  WorkloadSpec forwardCkpt;
  forwardCkpt.checkpoint = Checkpoint::attention;
  for (auto& b : backends) {
    const Support f = b->support(forwardCkpt);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.reasons.front().find("needs pass train"), std::string::npos);
  }
}

}  // namespace
}  // namespace attnscope
