// pass = train on cuda.math and cuda.flash: dQ, dK, dV of loss = sum(O * G) against the float64
// reference (the engine's checkGradients) on awkward sizes (odd lengths, Lq != Lkv, GQA, MQA,
// every mask kind and layout, every dtype, head dims 8 to 256), with and without checkpointing;
// measured peak == plan; the phases a `show --phases` table reads; cuda.flash's separate dQ pass
// gives the same gradients on every run; cuda.chunked refuses train. Needs a device: without one
// it exits 77 (ctest: Skipped) with the reason. (plan == allocation, buffer by buffer, for train
// points too: tests/cuda/test_plan_buffers_cuda.cpp.)
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/trace/phase_summary.h"
#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "kernels/cuda/cuda_backends.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_plans.h"
#include "tests/support/gradient_agreement.h"

using namespace attnscope;

namespace {

struct Case {
  int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
  DType dtype;
  const char* mask;
  MaskLayout layout = MaskLayout::broadcast;
};

WorkloadSpec trainSpec(const Case& c, Checkpoint checkpoint) {
  WorkloadSpec s;
  s.batch = c.batch;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.seq_q = c.seq_q;
  s.seq_kv = c.seq_kv;
  s.head_dim = c.head_dim;
  s.dtype = c.dtype;
  s.mask = *parseMask(c.mask).mask;
  s.mask_layout = c.layout;
  s.seed = 11;
  s.pass = Pass::train;
  s.checkpoint = checkpoint;
  return s;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
    for (const char* m : {"none", "causal", "window:17", "block:40", "dense:0.3"}) out.push_back({1, 4, 2, 97, 97, 64, dt, m});
    out.push_back({2, 2, 1, 70, 45, 24, dt, "dense:0.5", MaskLayout::per_head});
    // Lq > Lkv causal: the first rows see no key (zero output, zero dQ).
    out.push_back({1, 2, 1, 90, 40, 16, dt, "causal"});
    // Lq < Lkv, a ragged tile at both ends, the widest head.
    out.push_back({1, 2, 1, 77, 150, 256, dt, "window:9"});
    // Head dim no flash bucket takes: cuda.math only.
    out.push_back({1, 2, 2, 33, 80, 59, dt, "causal"});
  }
  out.push_back({1, 1, 1, 1, 1, 8, DType::fp16, "none"});
  out.push_back({2, 8, 2, 129, 200, 128, DType::fp16, "causal"});
  out.push_back({1, 8, 1, 257, 257, 128, DType::bf16, "dense:0.5", MaskLayout::per_head});  // MQA
  out.push_back({1, 2, 2, 1025, 1025, 64, DType::fp32, "none"});
  return out;
}

std::vector<std::unique_ptr<Backend>> trainingBackends() {
  std::vector<std::unique_ptr<Backend>> out;
  for (auto& b : makeCudaBackends())
    if (b->id() != "cuda.chunked") out.push_back(std::move(b));
  return out;
}

RunResult runTrain(Backend& b, const WorkloadSpec& spec, const HostInputs* inputs = nullptr) {
  RunOptions opt;
  opt.warmup = 1;  // a second pass must overwrite, not add to, the gradients
  opt.reps = 1;
  opt.inputs = inputs;
  return runPoint(b, spec, opt);
}

}  // namespace

TEST(CudaTrain, GradientsMatchFloat64AndPeakMatchesPlan) {
  auto backends = trainingBackends();
  ASSERT_EQ(backends.size(), 2u);
  int ran = 0;
  for (const Case& c : cases())
    for (Checkpoint ck : {Checkpoint::none, Checkpoint::attention}) {
      const WorkloadSpec spec = trainSpec(c, ck);
      ASSERT_TRUE(validate(spec).empty()) << describe(validate(spec));
      const HostInputs inputs = HostInputs::generate(spec);
      for (auto& b : backends) {
        const std::string where =
            b->id() + " " + summary(spec) + " layout " + std::string(toString(spec.mask_layout)) + " checkpoint " +
            std::string(toString(ck));
        const RunResult r = runTrain(*b, spec, &inputs);
        if (b->id() == "cuda.flash" && spec.headDim() % 8 != 0) {
          EXPECT_EQ(r.status, RunStatus::unsupported) << where;
          continue;
        }
        ASSERT_EQ(r.status, RunStatus::ok) << where << ": " << r.message;
        EXPECT_TRUE(r.accuracy.passed()) << where << ": error " << r.accuracy.max_abs_error;
        EXPECT_LE(r.accuracy.max_abs_error, toleranceFor(spec.dtype)) << where;
        EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << where;
        EXPECT_EQ(r.plan.ioBytes(), r.memory.io_bytes) << where;
        ++ran;
      }
    }
  std::printf("checked %d (backend, train spec) points against the float64 gradients\n", ran);
}

// The phases `show --phases` groups: the forward, the recompute around its forward, and the
// backward's steps under the CPU backends' names; the backward's peak holds P and dS on cuda.math.
TEST(CudaTrain, PhasesNameTheBackwardSteps) {
  const WorkloadSpec spec = trainSpec({1, 4, 2, 256, 256, 64, DType::fp16, "causal"}, Checkpoint::attention);
  for (auto& b : trainingBackends()) {
    const RunResult r = runTrain(*b, spec);
    ASSERT_EQ(r.status, RunStatus::ok) << b->id() << ": " << r.message;
    std::vector<std::string> names;
    int64_t ds_peak = 0;
    for (const PhaseStats& p : summarizePhases(r.trace.events)) {
      names.push_back(p.name);
      if (p.name == "backward dS") ds_peak = p.peak_bytes;
    }
    std::vector<std::string> want{"inputs", "attention", "recompute", "recompute/attention", "backward dK dV", "backward dQ"};
    if (b->id() == "cuda.math") want.push_back("backward dS");
    for (const auto& w : want)
      EXPECT_NE(std::find(names.begin(), names.end(), w), names.end()) << b->id() << " has no phase " << w;
    if (b->id() == "cuda.math") {
      EXPECT_GE(ds_peak, spec.ioBytes() + 2 * spec.scoreElements() * 2) << "P and dS live in backward dS";
    }
  }
}

// No atomics: the dK dV and dQ kernels sum in a fixed order, so two runs agree bit for bit.
TEST(CudaTrain, FlashGradientsAreTheSameOnEveryRun) {
  auto backends = trainingBackends();
  Backend& flash = *backends[1];
  ASSERT_EQ(flash.id(), "cuda.flash");
  const WorkloadSpec spec = trainSpec({2, 8, 2, 300, 300, 64, DType::bf16, "none"}, Checkpoint::none);
  const HostInputs in = HostInputs::generate(spec);
  AttentionGradients g[2];
  for (auto& grads : g) {
    auto alloc = flash.makeAllocator();
    RunContext ctx(*alloc);
    auto exec = flash.prepare(spec, in, ctx);
    exec->run();
    ASSERT_TRUE(exec->gradients(grads));
  }
  EXPECT_EQ(g[0].dq, g[1].dq);
  EXPECT_EQ(g[0].dk, g[1].dk);
  EXPECT_EQ(g[0].dv, g[1].dv);
}

// cuda.math (cuBLAS, P materialised) and cuda.flash (recomputed tiles) agree closely in fp32.
TEST(CudaTrain, MathAndFlashAgree) {
  auto backends = trainingBackends();
  const WorkloadSpec spec = trainSpec({1, 4, 2, 190, 190, 64, DType::fp32, "causal"}, Checkpoint::none);
  attnscope::testing::expectGradientsAgree(*backends[0], *backends[1], spec, 1e-4);
}

// What checkpointing buys on cuda.math: the forward's peak no longer holds P into the backward,
// measured as planned (the backward's P + dS equal the forward's S + P, so the peak itself only
// drops with a dense mask, whose additive copy lives in the forward only).
TEST(CudaTrain, MathCheckpointPeaksAreThePlans) {
  auto backends = trainingBackends();
  for (Checkpoint ck : {Checkpoint::none, Checkpoint::attention}) {
    const WorkloadSpec spec = trainSpec({1, 8, 8, 2048, 2048, 64, DType::fp16, "none"}, ck);
    const RunResult r = runTrain(*backends[0], spec);
    ASSERT_EQ(r.status, RunStatus::ok) << r.message;
    EXPECT_EQ(r.memory.measured_peak, cuda::planMathTrain(spec).peakBytes());
  }
}

int main(int argc, char** argv) {
  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (!info.available) {
    std::fprintf(stderr, "SKIPPED: no usable CUDA device (%s); the GPU tests need one\n", info.reason.c_str());
    return 77;
  }
  std::printf("device: %s, compute capability %d.%d\n", info.name.c_str(), info.caps.cc_major, info.caps.cc_minor);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
