// Registration of the CUDA backends and their honesty about the device. Runs on every machine:
// without a driver or device (CI) it checks that the backends say why, with the runtime's own
// text, and that nothing else breaks; with a device it checks they are available.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/result/environment.h"
#include "core/engine/run_engine.h"
#include "kernels/cuda/cuda_backends.h"
#include "kernels/cuda/cuda_device.h"

using namespace attnscope;

TEST(CudaRegistry, RegistersThreeBackendsAndSaysWhyWhenUnavailable) {
  BackendRegistry reg;
  registerCudaBackends(reg);
  for (const char* id : {"cuda.math", "cuda.chunked", "cuda.flash"}) ASSERT_NE(reg.find(id), nullptr) << id;
  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  WorkloadSpec spec;
  spec.dtype = DType::fp16;
  for (Backend* b : reg.all()) {
    EXPECT_EQ(b->device(), "cuda:0");
    EXPECT_FALSE(b->description().empty());
    EXPECT_GT(b->plan(spec).peakBytes(), spec.ioBytes());  // plans need no device
    if (info.available) {
      EXPECT_TRUE(b->availability().available) << b->id();
      EXPECT_GT(b->memoryAvailable(), 0);
    } else {
      ASSERT_FALSE(info.reason.empty());
      const Availability a = b->availability();
      EXPECT_FALSE(a.available);
      EXPECT_EQ(a.reason, "GPU backends unavailable: " + info.reason);
      const Support s = b->support(spec);
      ASSERT_FALSE(s.ok());
      EXPECT_EQ(s.reasons.front(), a.reason);
      EXPECT_EQ(b->memoryAvailable(), -1);
    }
  }
  if (!info.available) {
    const auto& notes = reg.notes();
    EXPECT_NE(std::find(notes.begin(), notes.end(), "GPU backends unavailable: " + info.reason), notes.end());
  }
}

TEST(CudaRegistry, UnavailableBackendsGiveUnsupportedRunsNotCrashes) {
  if (cuda::cudaDeviceInfo().available) GTEST_SKIP() << "a device is present; the GPU tests cover runs";
  for (auto& b : makeCudaBackends()) {
    WorkloadSpec spec;
    spec.seq_q = 97;
    spec.head_dim = 59;
    RunOptions opt;
    const RunResult r = runPoint(*b, spec, opt);
    EXPECT_EQ(r.status, RunStatus::unsupported) << b->id();
    EXPECT_NE(r.message.find("GPU backends unavailable: "), std::string::npos) << r.message;
    if (b->id() == "cuda.flash") {
      EXPECT_NE(r.message.find("multiple of 8"), std::string::npos) << r.message;
    }
  }
}

TEST(CudaRegistry, EnvironmentProbe) {
  BackendRegistry reg;
  registerCudaBackends(reg);
  const Environment env = captureEnvironment();
  EXPECT_FALSE(env.runtime_version.empty());  // cudaRuntimeGetVersion needs no driver
  EXPECT_FALSE(env.cublas_version.empty());   // nor does cublasGetProperty
  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (info.available) {
    ASSERT_FALSE(env.gpus.empty());
    EXPECT_EQ(env.gpus.front().name, info.name);
    EXPECT_TRUE(env.gpu_note.empty());
    EXPECT_FALSE(env.driver_version.empty());
  } else {
    EXPECT_TRUE(env.gpus.empty());
    EXPECT_EQ(env.gpu_note, "GPU backends unavailable: " + info.reason);
  }
}

// kind attention trains on cuda.math and cuda.flash (their plans are known, their support names
// no workload problem); cuda.chunked refuses train, every backend refuses kind layer and a
// checkpoint without train, each with the reason, on any machine.
TEST(CudaRegistry, TrainOnMathAndFlashLayerRefusedWithTheReason) {
  for (auto& b : makeCudaBackends()) {
    WorkloadSpec train, ckptTrain, layer, ckpt, additive, wide;
    additive.mask = parseMask("additive:0.5").mask.value();
    wide.head_dim = 320;
    train.pass = Pass::train;
    ckptTrain.pass = Pass::train;
    ckptTrain.checkpoint = Checkpoint::attention;
    layer.kind = WorkloadKind::layer;
    ckpt.checkpoint = Checkpoint::attention;
    auto says = [&](const Support& s, const char* why) {
      return std::any_of(s.reasons.begin(), s.reasons.end(),
                         [&](const std::string& r) { return r.find(why) != std::string::npos; });
    };
    for (const auto& [spec, why] : {std::pair<const WorkloadSpec*, const char*>{&layer, "kind layer is not implemented"},
                                    {&ckpt, "needs pass train"},
                                    {&additive, "mask additive (a float attn_mask) is not implemented"}}) {
      const Support s = b->support(*spec);
      ASSERT_FALSE(s.ok()) << b->id();
      EXPECT_TRUE(says(s, why)) << b->id() << ": " << why;
    }
    EXPECT_FALSE(b->plan(layer).known) << b->id();
    // head_dim above 256: cuda.flash's buckets end there and it says so; the cuBLAS paths take it.
    EXPECT_EQ(says(b->support(wide), "head_dim a multiple of 8 between 8 and 256 (got 320)"), b->id() == "cuda.flash")
        << b->id();
    const bool trains = b->id() != "cuda.chunked";
    for (const WorkloadSpec* spec : {&train, &ckptTrain}) {
      const Support s = b->support(*spec);
      EXPECT_EQ(says(s, "cuda.chunked runs the forward only"), !trains) << b->id();
      EXPECT_EQ(b->plan(*spec).known, trains) << b->id();
      // Without a device the only reason a training backend gives is the device's absence.
      if (trains && !cuda::cudaDeviceInfo().available) {
        ASSERT_EQ(s.reasons.size(), 1u) << b->id() << ": " << s.reasons.back();
        EXPECT_NE(s.reasons[0].find("GPU backends unavailable"), std::string::npos);
      }
      if (trains) {
        EXPECT_GT(b->plan(*spec).peakBytes(), b->plan(WorkloadSpec{}).peakBytes()) << b->id();
      }
    }
    if (!trains) {
      RunOptions opt;
      EXPECT_EQ(runPoint(*b, train, opt).status, RunStatus::unsupported) << b->id();
    }
  }
}
