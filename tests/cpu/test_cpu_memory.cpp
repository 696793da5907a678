// Memory of the CPU backends: the allocator's measured peak equals the plan's predicted peak
// exactly, every run has a timeline, and the two backends grow the way they should with
// sequence length (flash linearly, reference quadratically).

#include <gtest/gtest.h>

#include <algorithm>

#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope {
namespace {

using cputest::Shape;
using cputest::specOf;

RunResult runQuiet(Backend& backend, const WorkloadSpec& spec, int reps = 2) {
  RunOptions opt;
  opt.warmup = 1;
  opt.reps = reps;
  opt.check = CheckMode::off;
  return runPoint(backend, spec, opt);
}

bool hasPhase(const RunResult& r, const std::string& name) {
  return std::any_of(r.trace.events.begin(), r.trace.events.end(),
                     [&](const TraceEvent& e) { return e.kind == EventKind::phase && e.name == name; });
}

int64_t planned(const MemoryPlan& p, const std::string& name) {
  for (const auto& b : p.buffers)
    if (b.name == name) return b.bytes;
  return -1;
}

class CpuMemory : public ::testing::Test {
 protected:
  std::vector<std::unique_ptr<Backend>> backends_ = cputest::cpuBackends();
  Backend& reference() { return *backends_[0]; }
  Backend& flash() { return *backends_[1]; }
};

TEST_F(CpuMemory, MeasuredPeakEqualsPlanForBothBackends) {
  const Shape shapes[] = {
      {1, 8, 0, 512, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1},
      {2, 4, 2, 300, 700, 59, DType::fp16, "causal", MaskLayout::broadcast, 2},
      {1, 4, 1, 1000, 0, 128, DType::bf16, "window:100", MaskLayout::broadcast, 3},
      {2, 4, 0, 256, 0, 32, DType::fp32, "dense:0.5", MaskLayout::per_head, 4},
      {1, 2, 0, 333, 0, 16, DType::bf16, "dense", MaskLayout::per_head, 5},
      {1, 2, 0, 500, 0, 64, DType::fp16, "block:64", MaskLayout::broadcast, 6},
      {1, 1, 0, 1, 0, 1, DType::fp32, "none", MaskLayout::broadcast, 7},
  };
  for (const Shape& shape : shapes) {
    const WorkloadSpec spec = specOf(shape);
    for (auto& b : backends_) {
      const RunResult r = runQuiet(*b, spec);
      ASSERT_EQ(r.status, RunStatus::ok) << b->id() << " " << summary(spec) << ": " << r.message;
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << b->id() << " " << summary(spec);
      EXPECT_EQ(r.memory.predicted_peak, b->plan(spec).peakBytes());
      // Inputs, output and mask appear in the plan exactly as the spec counts them.
      EXPECT_EQ(r.plan.ioBytes(), spec.ioBytes()) << b->id() << " " << summary(spec);
      EXPECT_EQ(planned(r.plan, "mask"), spec.mask.kind == MaskKind::dense ? spec.maskBytes() : -1);
    }
  }
}

TEST_F(CpuMemory, ReferenceMaterialisesScoresAndProbabilities) {
  const WorkloadSpec spec = specOf({2, 4, 2, 200, 300, 64, DType::fp32, "dense:0.5", MaskLayout::per_head, 1});
  const MemoryPlan p = reference().plan(spec);
  const int64_t scores = 2 * 4 * 200 * 300 * 4;
  EXPECT_EQ(planned(p, "S = scale * Q K^T"), scores);
  EXPECT_EQ(planned(p, "P = softmax(S)"), scores);
  EXPECT_EQ(planned(p, "mask"), 2 * 4 * 200 * 300);  // per-head layout at full size
  EXPECT_EQ(p.steps[static_cast<size_t>(p.peakStep())], "softmax");
  EXPECT_EQ(p.peakBytes(), spec.ioBytes() + 2 * scores);
  // GQA shares K/V: they are planned at kv_heads, not heads.
  EXPECT_EQ(planned(p, "k"), 2 * 2 * 300 * 64 * 4);

  const RunResult r = runQuiet(reference(), spec, 1);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.memory.measured_peak, p.peakBytes());
  for (const char* phase : {"inputs", "scores", "softmax", "pv"}) EXPECT_TRUE(hasPhase(r, phase)) << phase;
}

TEST_F(CpuMemory, FlashHoldsNothingQuadratic) {
  const WorkloadSpec spec = specOf({1, 8, 2, 2048, 0, 64, DType::fp16, "dense:0.5", MaskLayout::broadcast, 1});
  const MemoryPlan p = flash().plan(spec);
  const auto& pool_threads = static_cast<const cpu::CpuFlashBackend&>(flash()).threads();
  int tiles = 0;
  for (const auto& b : p.buffers) {
    if (b.name.rfind("tiles", 0) == 0) ++tiles;
    if (b.role == BufferRole::workspace) {
      EXPECT_LT(b.bytes, 4 << 20) << b.name;
    }
  }
  EXPECT_EQ(tiles, pool_threads);
  EXPECT_EQ(planned(p, "lse"), 8 * 2048 * 4);
  const RunResult r = runQuiet(flash(), spec, 1);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.memory.measured_peak, p.peakBytes());
  EXPECT_TRUE(hasPhase(r, "inputs"));
  EXPECT_TRUE(hasPhase(r, "attention"));
}

// The acceptance numbers: B=1, H=8, D=64, fp32, seq 1024 -> 4096.
TEST_F(CpuMemory, PeakGrowthFrom1024To4096) {
  WorkloadSpec small = specOf({1, 8, 0, 1024, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1});
  WorkloadSpec large = small;
  large.seq_q = 4096;
  for (auto& b : backends_) {
    const RunResult rs = runQuiet(*b, small, 1);
    const RunResult rl = runQuiet(*b, large, 1);
    ASSERT_EQ(rs.status, RunStatus::ok) << rs.message;
    ASSERT_EQ(rl.status, RunStatus::ok) << rl.message;
    EXPECT_EQ(rs.memory.measured_peak, rs.memory.predicted_peak);
    EXPECT_EQ(rl.memory.measured_peak, rl.memory.predicted_peak);
    const double ratio = static_cast<double>(rl.memory.measured_peak) / static_cast<double>(rs.memory.measured_peak);
    if (b->id() == "cpu.flash") {
      EXPECT_LT(ratio, 5.0) << rs.memory.measured_peak << " -> " << rl.memory.measured_peak;
    } else {
      EXPECT_GT(ratio, 12.0) << rs.memory.measured_peak << " -> " << rl.memory.measured_peak;
      EXPECT_LT(ratio, 17.0) << rs.memory.measured_peak << " -> " << rl.memory.measured_peak;
    }
  }
}

TEST_F(CpuMemory, EveryBufferIsFreedAfterTheRun) {
  const WorkloadSpec spec = specOf({1, 2, 0, 300, 0, 64, DType::bf16, "causal", MaskLayout::broadcast, 1});
  for (auto& b : backends_) {
    auto alloc = b->makeAllocator();
    EXPECT_EQ(alloc->kind(), MemoryKind::host);
    RunContext ctx(*alloc);
    const HostInputs inputs = HostInputs::generate(spec);
    {
      auto exec = b->prepare(spec, inputs, ctx);
      EXPECT_EQ(alloc->liveBytes(), b->id() == "cpu.flash" ? spec.ioBytes() + 2 * 300 * 4 : spec.ioBytes());
      EXPECT_GT(exec->run(), 0.0);
      EXPECT_EQ(alloc->liveBytes(), b->id() == "cpu.flash" ? spec.ioBytes() + 2 * 300 * 4 : spec.ioBytes());
    }
    EXPECT_EQ(alloc->liveBytes(), 0) << b->id();
    EXPECT_EQ(alloc->peakBytes(), b->plan(spec).peakBytes()) << b->id();
  }
}

TEST_F(CpuMemory, AllocatorLimitBecomesOom) {
  // A limit below the plan makes the run fail cleanly with the allocator's OutOfMemory.
  const WorkloadSpec spec = specOf({1, 4, 0, 512, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1});
  for (auto& b : backends_) {
    HostAllocator alloc(b->plan(spec).peakBytes() - 1);
    RunContext ctx(alloc);
    const HostInputs inputs = HostInputs::generate(spec);
    EXPECT_THROW(
        {
          auto exec = b->prepare(spec, inputs, ctx);
          exec->run();
        },
        OutOfMemory)
        << b->id();
    EXPECT_EQ(alloc.liveBytes(), 0) << b->id();
  }
}

}  // namespace
}  // namespace attnscope
