// The default check, where it samples, never passes a wrong row it promises to hold: runs of the
// real cpu.flash through the engine, each with one kind of wrong result, are status wrong. The
// test backend reports 1 us per pass, so `auto` samples whatever this machine's speed (the check
// then costs far more than the run); each case also says it sampled.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"
#include "tests/support/corrupting_backend.h"

namespace attnscope {
namespace {

using cputest::Shape;

// cpu.flash with `corrupt` applied to what it returns, reporting a 1 us pass.
using testing::CorruptingBackend;
using Results = testing::Results;

class CheckSampling : public ::testing::Test {
 protected:
  RunResult run(const WorkloadSpec& spec, std::function<void(Results)> corrupt,
                const HostInputs* inputs = nullptr, CheckMode mode = CheckMode::automatic) {
    CorruptingBackend b(*backends_[1], std::move(corrupt), 1e-6);
    RunOptions opt;
    opt.warmup = 0;
    opt.reps = 1;
    opt.inputs = inputs;
    opt.check = mode;
    return runPoint(b, spec, opt);
  }
  // A wrong result, found by a check that held only part of the rows.
  static void expectCaughtBySampling(const RunResult& r, const std::string& what) {
    EXPECT_EQ(r.status, RunStatus::wrong) << what << ": " << statusText(r) << " " << r.message;
    EXPECT_LT(r.accuracy.checkedFraction(), 0.5) << what;
  }
  std::vector<std::unique_ptr<Backend>> backends_ = cputest::cpuBackends();
};

// 2 x 4 batch-heads of 1025 queries: the last query block holds query 1024 alone.
const Shape kShape{2, 4, 0, 1025, 0, 32, DType::fp32, "window:100", MaskLayout::broadcast, 3};

void addToRow(std::vector<float>& out, int64_t row, int64_t D, float by) { out[static_cast<size_t>(row * D)] += by; }

TEST_F(CheckSampling, TheSameRunIsOkWithTheCoverageSaid) {
  const RunResult r = run(cputest::specOf(kShape), [](Results) {});
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_LT(r.accuracy.checkedFraction(), 0.5);
  EXPECT_EQ(statusText(r).rfind("ok, checked ", 0), 0u) << statusText(r);
  const RunResult off = run(cputest::specOf(kShape), [](Results) {}, nullptr, CheckMode::off);
  EXPECT_EQ(off.status, RunStatus::ok);
  EXPECT_FALSE(off.accuracy.checked);
  EXPECT_EQ(statusText(off), "ok, not checked");
  EXPECT_EQ(run(cputest::specOf(kShape), [](Results) {}, nullptr, CheckMode::full).accuracy.checkedFraction(), 1.0);
}

TEST_F(CheckSampling, APlantedHugeQRowIsCaught) {
  const WorkloadSpec spec = cputest::specOf(kShape);
  HostInputs in = HostInputs::generate(spec);
  const int64_t row = (1 * 4 + 2) * 1025 + 700, D = spec.headDim();
  for (int64_t d = 0; d < D; ++d) in.q.set(row * D + d, 3e38f);
  const RunResult r = run(spec, [](Results) {}, &in);
  expectCaughtBySampling(r, "q row of 3e38");
  EXPECT_NE(r.message.find("row " + std::to_string(row)), std::string::npos) << r.message;
}

TEST_F(CheckSampling, QScaledBy2e5IsCaught) {
  // The case: 8 heads of 1024; float32 rounding of scores near 2e5 puts rows 40x over.
  const WorkloadSpec spec = cputest::specOf({1, 8, 0, 1024, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1});
  HostInputs in = HostInputs::generate(spec);
  for (int64_t e = 0; e < in.q.elements(); ++e) in.q.set(e, in.q.at(e) * 2e5f);
  const RunResult r = run(spec, [](Results) {}, &in);
  EXPECT_EQ(r.status, RunStatus::wrong) << statusText(r);
  // Every row is at risk there, so the sample is every row.
  EXPECT_EQ(r.accuracy.checkedFraction(), 1.0);
}

TEST_F(CheckSampling, AWrongBatchHeadIsCaught) {
  // 128 batch-heads of one query block over 8192 keys: the seeded part is 128 rows, so a sample
  // without every batch-head misses most single heads.
  const WorkloadSpec spec = cputest::specOf({8, 16, 1, 64, 8192, 64, DType::fp32, "none", MaskLayout::broadcast, 5});
  for (int64_t bh : {37, 101}) {
    const RunResult r = run(spec, [&](Results x) {
      if (x.out)
        for (int64_t i = 0; i < 64; ++i) addToRow(*x.out, bh * 64 + i, 64, 0.01f);
    });
    expectCaughtBySampling(r, "batch-head " + std::to_string(bh));
  }
}

TEST_F(CheckSampling, AnErrorAtAMaskEdgeIsCaught) {
  // window:100: query 99 is the last whose window is clipped by key 0, query 100 the first not.
  for (int64_t i : {99, 100}) {
    const RunResult r = run(cputest::specOf(kShape), [&](Results x) {
      if (x.out) addToRow(*x.out, 5 * 1025 + i, 32, 0.01f);
    });
    expectCaughtBySampling(r, "query " + std::to_string(i));
  }
}

TEST_F(CheckSampling, AnErrorInTheLastQueryBlockIsCaught) {
  // 1030 queries, no mask: the last block is queries 1024..1029, a tail a kernel may get wrong,
  // here off in one batch-head. Seed 1's seeded rows miss them: only the every-block rule holds
  // them.
  const WorkloadSpec spec = cputest::specOf({2, 4, 0, 1030, 0, 32, DType::fp32, "none", MaskLayout::broadcast, 1});
  const RunResult r = run(spec, [&](Results x) {
    if (x.out)
      for (int64_t i = 1024; i < 1030; ++i) addToRow(*x.out, 2 * 1030 + i, 32, 0.01f);
  });
  expectCaughtBySampling(r, "the last query block");
}

TEST_F(CheckSampling, ANanInARowNotSampledIsCaught) {
  const RunResult r = run(cputest::specOf(kShape), [&](Results x) {
    if (x.out) (*x.out)[static_cast<size_t>((3 * 1025 + 517) * 32 + 4)] = NAN;
  });
  EXPECT_EQ(r.status, RunStatus::wrong);
  EXPECT_NE(r.message.find("row " + std::to_string(3 * 1025 + 517) + " element 4 is nan"), std::string::npos) << r.message;
}

// The train check: dQ in the last query block, dK and dV in the last key block (queries and keys
// 1024..1028 of 1030, one batch-head or KV head each).
TEST_F(CheckSampling, WrongGradientsInTheLastBlockAreCaught) {
  WorkloadSpec spec = cputest::specOf({2, 4, 2, 1030, 0, 32, DType::fp32, "none", MaskLayout::broadcast, 4});
  spec.pass = Pass::train;
  struct Case {
    std::vector<float> AttentionGradients::*member;
    int64_t head;
    const char* name;
  };
  for (const Case& c : {Case{&AttentionGradients::dq, 7, "dq"}, Case{&AttentionGradients::dk, 3, "dk"},
                        Case{&AttentionGradients::dv, 1, "dv"}}) {
    const RunResult r = run(spec, [&](Results x) {
      if (x.grads)
        for (int64_t i = 1024; i < 1029; ++i) ((*x.grads).*c.member)[static_cast<size_t>((c.head * 1030 + i) * 32)] += 0.05f;
    });
    expectCaughtBySampling(r, c.name);
    EXPECT_NE(r.message.find(c.name), std::string::npos) << r.message;
  }
}

// A layer-train check covers a few per cent of its rows, and still the rows that matter: dx in
// the last position block of batch 0 (positions 1024..1029 of 1030). The seeds here are ones whose
// seeded rows miss those blocks, so only the every-block rule holds them.
TEST_F(CheckSampling, ALayerTrainCheckHoldsTheLastBlock) {
  WorkloadSpec spec = cputest::specOf({2, 4, 2, 1030, 0, 32, DType::fp32, "none", MaskLayout::broadcast, 7});
  spec.kind = WorkloadKind::layer;
  spec.pass = Pass::train;
  const int64_t E = 4 * 32;
  const RunResult r = run(spec, [&](Results x) {
    if (x.layer)
      for (int64_t p = 1024; p < 1030; ++p) x.layer->dx[static_cast<size_t>(p * E + 7)] += 0.05f;
  });
  expectCaughtBySampling(r, "dx");
  EXPECT_NE(r.message.find("dx"), std::string::npos) << r.message;
}

// A NaN anywhere in a layer's gradients fails the run, in a row the sampled check does not hold
// too: every element of every output is scanned before the sample is drawn (the sampled check
// alone holds a few per cent of this layer's rows).
TEST_F(CheckSampling, ANanInALayersGradientIsCaughtWhereverItIs) {
  WorkloadSpec spec = cputest::specOf({2, 4, 2, 1030, 0, 32, DType::fp32, "none", MaskLayout::broadcast, 7});
  spec.kind = WorkloadKind::layer;
  spec.pass = Pass::train;
  const int64_t E = 4 * 32, at = (517 + 1030) * E + 3;  // batch 1, position 517
  const RunResult r = run(spec, [&](Results x) {
    if (x.layer) x.layer->dx[static_cast<size_t>(at)] = NAN;
  });
  EXPECT_EQ(r.status, RunStatus::wrong) << r.message;
  EXPECT_NE(r.message.find("dx element " + std::to_string(at) + " is not finite (nan)"), std::string::npos) << r.message;
}

}  // namespace
}  // namespace attnscope
