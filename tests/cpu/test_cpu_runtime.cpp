// Run-time behaviour of the CPU backends: cancellation from another thread inside a long run,
// rows with no visible key, worker counts other than the core count, inputs that do not match
// the spec, and support() answers.

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/spec/mask.h"
#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope {
namespace {

using cputest::Shape;
using cputest::specOf;
using Clock = std::chrono::steady_clock;

// Sets the cancel flag 100 ms into a run that would take several seconds; runPoint must come
// back cancelled within a second of the flag.
void expectCancelsQuickly(Backend& backend, const WorkloadSpec& spec, int reps) {
  const HostInputs inputs = HostInputs::generate(spec);  // outside the timed part
  std::atomic<bool> cancel{false};
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = reps;
  opt.check = CheckMode::off;
  opt.cancel = &cancel;
  opt.inputs = &inputs;
  Clock::time_point cancelled_at{};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancelled_at = Clock::now();
    cancel.store(true);
  });
  const RunResult r = runPoint(backend, spec, opt);
  const Clock::time_point returned = Clock::now();
  canceller.join();
  EXPECT_EQ(r.status, RunStatus::cancelled) << backend.id() << ": " << r.message;
  // The promise is under a second; the bound is looser so that a loaded 2-core CI machine does not
  // fail it, and still far below the many seconds a run that ignores the flag would take.
  EXPECT_LT(std::chrono::duration<double>(returned - cancelled_at).count(), 3.0) << backend.id();
  // Everything was released on the way out.
  EXPECT_GT(r.memory.measured_peak, 0);
}

TEST(CpuRuntime, FlashCancelsWithinASecond) {
  auto backends = cputest::cpuBackends();
  // About 0.5 TFLOP per rep: many seconds on a small machine.
  expectCancelsQuickly(*backends[1], specOf({1, 8, 0, 16384, 0, 64, DType::fp32, "none", MaskLayout::broadcast, 1}), 5);
}

TEST(CpuRuntime, ReferenceCancelsWithinASecond) {
  auto backends = cputest::cpuBackends();
  // 512 MiB of scores and probabilities, about 70 GFLOP per rep.
  expectCancelsQuickly(*backends[0], specOf({1, 1, 0, 8192, 0, 256, DType::fp32, "none", MaskLayout::broadcast, 1}),
                       10);
}

TEST(CpuRuntime, CancelledBeforeStartIsReported) {
  auto backends = cputest::cpuBackends();
  std::atomic<bool> cancel{true};
  RunOptions opt;
  opt.cancel = &cancel;
  for (auto& b : backends) {
    const RunResult r = runPoint(*b, specOf({1, 2, 0, 64, 0, 16, DType::fp32, "none", MaskLayout::broadcast, 1}), opt);
    EXPECT_EQ(r.status, RunStatus::cancelled) << b->id();
  }
}

// Rows whose mask leaves no key must come out as exact zeros, and every other row must not.
TEST(CpuRuntime, RowsWithNoVisibleKeyAreZero) {
  const Shape shapes[] = {
      {1, 2, 0, 200, 64, 32, DType::fp32, "window:8", MaskLayout::broadcast, 1},   // Lq > Lkv: early rows see nothing
      {1, 2, 0, 300, 97, 16, DType::fp16, "causal", MaskLayout::broadcast, 2},
      {2, 2, 1, 97, 16, 8, DType::fp32, "dense:0.05", MaskLayout::per_head, 3},    // most rows draw no key
      {1, 1, 0, 97, 12, 8, DType::bf16, "dense:0.05", MaskLayout::broadcast, 4},
  };
  for (const Shape& shape : shapes) {
    const WorkloadSpec spec = specOf(shape);
    const HostInputs inputs = HostInputs::generate(spec);
    const int64_t Lq = spec.seq_q, Lkv = spec.seqKv(), D = spec.headDim();
    for (auto& b : cputest::cpuBackends()) {
      std::vector<float> out;
      RunOptions opt;
      opt.warmup = 0;
      opt.reps = 1;
      opt.inputs = &inputs;
      opt.output = &out;
      const RunResult r = runPoint(*b, spec, opt);
      ASSERT_EQ(r.status, RunStatus::ok) << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << b->id() << " " << summary(spec);
      ASSERT_EQ(static_cast<int64_t>(out.size()), spec.qElements());
      int64_t empty_rows = 0;
      for (int64_t row = 0; row < spec.batch * spec.heads * Lq; ++row) {
        const int64_t i = row % Lq, bh = row / Lq;
        const KeyRange keys = visibleKeys(spec.mask, i, Lq, Lkv);
        bool any = false;
        for (int64_t j = keys.begin; j < keys.end && !any; ++j) {
          const int64_t at = spec.mask_layout == MaskLayout::per_head ? (bh * Lq + i) * Lkv + j : i * Lkv + j;
          any = spec.mask.kind != MaskKind::dense || inputs.mask[static_cast<size_t>(at)] != 0;
        }
        bool zero = true;
        for (int64_t d = 0; d < D; ++d) zero &= out[static_cast<size_t>(row * D + d)] == 0.0f;
        if (!any) {
          ++empty_rows;
          EXPECT_TRUE(zero) << b->id() << " " << summary(spec) << " row " << row;
        } else {
          EXPECT_FALSE(zero) << b->id() << " " << summary(spec) << " row " << row;
        }
      }
      EXPECT_GT(empty_rows, 0) << summary(spec) << ": the case should have rows with no visible key";
    }
  }
}

// More workers than cores, and a single worker, give the same answer and the same plan rule.
TEST(CpuRuntime, AnyWorkerCountGivesTheSameOutput) {
  const WorkloadSpec spec = specOf({2, 4, 2, 300, 0, 64, DType::fp32, "causal", MaskLayout::broadcast, 1});
  const HostInputs inputs = HostInputs::generate(spec);
  std::vector<std::vector<float>> outs;
  for (int threads : {1, 3, 5}) {
    for (auto& b : cputest::cpuBackends(threads)) {
      EXPECT_EQ(static_cast<cpu::CpuBackend&>(*b).threads(), threads);
      std::vector<float> out;
      RunOptions opt;
      opt.warmup = 0;
      opt.reps = 2;
      opt.inputs = &inputs;
      opt.output = &out;
      const RunResult r = runPoint(*b, spec, opt);
      ASSERT_EQ(r.status, RunStatus::ok) << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << b->id() << " threads " << threads;
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << b->id() << " threads " << threads;
      if (b->id() == "cpu.flash") outs.push_back(out);
    }
  }
  // Each (batch, head, query tile) is computed by one worker in a fixed order: bit-identical.
  for (size_t k = 1; k < outs.size(); ++k) EXPECT_EQ(outs[k], outs[0]);
}

TEST(CpuRuntime, MismatchedInputsAreAnError) {
  const WorkloadSpec spec = specOf({1, 2, 0, 64, 0, 16, DType::fp16, "dense:0.5", MaskLayout::broadcast, 1});
  WorkloadSpec other = spec;
  other.dtype = DType::fp32;
  const HostInputs wrong_dtype = HostInputs::generate(other);
  HostInputs short_mask = HostInputs::generate(spec);
  short_mask.mask.pop_back();
  for (auto& b : cputest::cpuBackends()) {
    for (const HostInputs* in : {&wrong_dtype, static_cast<const HostInputs*>(&short_mask)}) {
      RunOptions opt;
      opt.inputs = in;
      const RunResult r = runPoint(*b, spec, opt);
      EXPECT_EQ(r.status, RunStatus::error) << b->id();
      EXPECT_FALSE(r.message.empty());
    }
  }
}

TEST(CpuRuntime, SupportAndIdentity) {
  auto backends = cputest::cpuBackends();
  EXPECT_EQ(backends[0]->id(), "cpu.reference");
  EXPECT_EQ(backends[1]->id(), "cpu.flash");
  WorkloadSpec bad = specOf({1, 4, 3, 64, 0, 16, DType::fp32, "none", MaskLayout::broadcast, 1});  // 3 does not divide 4
  for (auto& b : backends) {
    EXPECT_EQ(b->device(), "cpu");
    EXPECT_TRUE(b->availability().available);
    EXPECT_FALSE(b->description().empty());
    EXPECT_GT(b->memoryAvailable(), 0);
    EXPECT_EQ(b->memoryAvailable() > 0, hostMemoryAvailable() > 0);
    for (int64_t d : {1, 7, 256})
      EXPECT_TRUE(b->support(specOf({1, 2, 0, 33, 17, d, DType::bf16, "window:5", MaskLayout::broadcast, 1})).ok());
    const Support s = b->support(bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.reasons.front().find("kv_heads"), std::string::npos) << s.reasons.front();
  }
}

}  // namespace
}  // namespace attnscope
