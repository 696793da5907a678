// Every CUDA backend against the float64 reference on awkward sizes, every mask kind and
// layout, every dtype, GQA and MQA; measured peak against the plan; OOM and launch-error
// recovery. Needs a device: without one it exits 77 (ctest: Skipped) with the reason.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include "core/engine/run_engine.h"
#include "kernels/cuda/cuda_backends.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_math_backend.h"
#include "kernels/cuda/device_allocator.h"

using namespace attnscope;

namespace {

struct Case {
  int64_t batch, heads, kv_heads, seq_q, seq_kv, head_dim;
  DType dtype;
  const char* mask;
  MaskLayout layout = MaskLayout::broadcast;
};

WorkloadSpec specOf(const Case& c) {
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
  s.seed = 7;
  return s;
}

std::vector<Case> accuracyCases() {
  std::vector<Case> cases;
  const DType dtypes[] = {DType::fp32, DType::fp16, DType::bf16};
  // Every mask kind and layout, every dtype, with GQA (4 query heads on 2 kv heads).
  for (DType dt : dtypes)
    for (const char* m : {"none", "causal", "window:33", "block:32", "dense:0.7"}) {
      cases.push_back({1, 4, 2, 97, 97, 64, dt, m});
      if (std::string(m) == "dense:0.7") cases.push_back({2, 4, 2, 97, 97, 64, dt, m, MaskLayout::per_head});
    }
  // Head dims, Lq != Lkv both ways. 59 is math/chunked only.
  for (DType dt : dtypes)
    for (int64_t d : {8, 59, 64, 128, 256}) {
      cases.push_back({2, 2, 2, 97, 130, d, dt, "causal"});
      cases.push_back({1, 2, 2, 130, 97, d, dt, "none"});
    }
  // Lengths: 1, non-multiples of every tile, Lq = 1 against many keys.
  for (DType dt : {DType::fp32, DType::fp16})
    for (auto [lq, lkv] : {std::pair<int64_t, int64_t>{1, 1}, {1, 97}, {1025, 1025}, {97, 1}})
      for (const char* m : {"none", "causal"}) cases.push_back({1, 2, 2, lq, lkv, 64, dt, m});
  // GQA and MQA with the masks that index by head.
  for (int64_t kvh : {1, 2}) {
    cases.push_back({2, 8, kvh, 257, 257, 128, DType::bf16, "dense:0.5", MaskLayout::per_head});
    cases.push_back({1, 8, kvh, 257, 257, 128, DType::fp16, "window:100"});
  }
  // Long and wide: 1025 x 1025 at head_dim 256, causal and block, half precision.
  cases.push_back({1, 2, 1, 1025, 1025, 256, DType::fp16, "causal"});
  cases.push_back({1, 2, 2, 1025, 1025, 128, DType::bf16, "block:100"});
  // A dense mask with rows that see nothing (keep-probability tiny): those rows output zeros.
  cases.push_back({1, 2, 2, 65, 20, 64, DType::fp16, "dense:0.02"});
  // Causal with Lq > Lkv: the first Lq - Lkv queries see no key.
  cases.push_back({1, 2, 2, 200, 64, 64, DType::bf16, "causal"});
  return cases;
}

std::vector<std::unique_ptr<Backend>> backendsUnderTest() {
  auto all = makeCudaBackends();
  // A small chunk so cuda.chunked really runs several chunks (and a ragged last one).
  all.push_back(std::make_unique<cuda::CudaMathBackend>(true, 40));
  return all;
}

std::string describeCase(const Backend& b, const WorkloadSpec& s) {
  return b.id() + " " + b.description().substr(0, 30) + " | " + summary(s) + " layout " +
         std::string(toString(s.mask_layout));
}

}  // namespace

TEST(CudaBackends, AgreeWithFloat64Reference) {
  auto backends = backendsUnderTest();
  int ran = 0;
  for (const Case& c : accuracyCases()) {
    const WorkloadSpec spec = specOf(c);
    ASSERT_TRUE(validate(spec).empty()) << describe(validate(spec));
    const HostInputs inputs = HostInputs::generate(spec);
    for (auto& b : backends) {
      RunOptions opt;
      opt.warmup = 0;
      opt.reps = 1;
      opt.inputs = &inputs;
      const RunResult r = runPoint(*b, spec, opt);
      const std::string what = describeCase(*b, spec);
      if (b->id() == "cuda.flash" && spec.headDim() % 8 != 0) {
        EXPECT_EQ(r.status, RunStatus::unsupported) << what;
        EXPECT_NE(r.message.find("multiple of 8"), std::string::npos) << what << ": " << r.message;
        continue;
      }
      ASSERT_EQ(r.status, RunStatus::ok) << what << ": " << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << what << ": max abs error " << r.accuracy.max_abs_error << " > "
                                       << r.accuracy.tolerance << " (rel L2 " << r.accuracy.rel_l2_error << ")";
      // Our own allocator and our own plan: equal for every backend, not only math and chunked.
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << what;
      ++ran;
    }
  }
  std::printf("checked %d (backend, spec) points against the float64 reference\n", ran);
}

TEST(CudaBackends, MeasuredPeakEqualsPlanAndFlashStaysNearIo) {
  auto backends = makeCudaBackends();
  WorkloadSpec spec = specOf({1, 16, 16, 4096, 4096, 128, DType::fp16, "causal"});
  const HostInputs inputs = HostInputs::generate(spec);
  for (auto& b : backends) {
    RunOptions opt;
    opt.inputs = &inputs;
    const RunResult r = runPoint(*b, spec, opt);
    ASSERT_EQ(r.status, RunStatus::ok) << b->id() << ": " << r.message;
    EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << b->id();
    if (b->id() == "cuda.flash") {
      EXPECT_LE(static_cast<double>(r.memory.measured_peak), 1.05 * static_cast<double>(spec.ioBytes()));
    }
    if (b->id() == "cuda.math") {  // S and P at [1, 16, 4096, 4096] in fp16: 512 MiB each
      EXPECT_GE(r.memory.measured_peak, spec.ioBytes() + 2 * spec.scoreElements() * 2);
    }
  }
}

TEST(CudaBackends, AllocationFailureIsOutOfMemoryWithNumbers) {
  const auto& info = cuda::cudaDeviceInfo();
  cuda::DeviceAllocator alloc(0);
  const int64_t too_much = info.caps.memory_total + (int64_t{1} << 30);
  try {
    alloc.allocate(too_much, "too much");
    FAIL() << "an allocation larger than the device succeeded";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested(), too_much);
    EXPECT_GT(e.freeBytes(), 0);
    EXPECT_NE(std::string(e.what()).find("requested"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // the failed cudaMalloc left nothing behind
  EXPECT_EQ(alloc.liveBytes(), 0);
}

// A run whose buffers do not fit in what is free becomes status oom, releases what it had, and
// the next point runs normally.
TEST(CudaBackends, OutOfMemoryRunRecovers) {
  auto backends = makeCudaBackends();
  Backend& math = *backends[0];
  ASSERT_EQ(math.id(), "cuda.math");
  // Predicted just over 4 GiB: S and P of [1, 16, 8192, 8192] in fp16 are 2 GiB each.
  const WorkloadSpec spec = specOf({1, 16, 16, 8192, 8192, 64, DType::fp16, "none"});
  const int64_t need = math.plan(spec).peakBytes();
  ASSERT_LT(need, cuda::cudaDeviceInfo().caps.memory_total);

  // Warm up once so the cuBLAS handle and context exist before we measure free memory.
  {
    RunOptions opt;
    opt.check = CheckMode::off;
    WorkloadSpec small = specOf({1, 1, 1, 64, 64, 64, DType::fp16, "none"});
    ASSERT_EQ(runPoint(math, small, opt).status, RunStatus::ok);
  }
  const int64_t free_before = cuda::cudaFreeBytes(0);
  // Ballast leaves about half of what the run needs.
  cuda::DeviceAllocator ballast_alloc(0);
  std::vector<Buffer<uint8_t>> ballast;
  int64_t target = free_before - need / 2;
  const int64_t piece = int64_t{1} << 30;
  while (target > 0) {
    const int64_t n = std::min(piece, target);
    try {
      ballast.emplace_back(ballast_alloc, n, "ballast");
    } catch (const OutOfMemory&) {
      break;
    }
    target -= n;
  }
  RunOptions opt;
  opt.guard_memory = false;  // reach the allocator, not the engine's up-front guard
  opt.check = CheckMode::off;
  opt.warmup = 0;
  opt.reps = 1;
  const RunResult failed = runPoint(math, spec, opt);
  EXPECT_EQ(failed.status, RunStatus::oom) << failed.message;
  EXPECT_NE(failed.message.find("requested"), std::string::npos) << failed.message;
  ballast.clear();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // Everything of the failed run was released.
  EXPECT_GE(cuda::cudaFreeBytes(0), free_before - (int64_t{64} << 20));

  opt.check = CheckMode::automatic;
  const RunResult ok = runPoint(math, spec, opt);
  ASSERT_EQ(ok.status, RunStatus::ok) << ok.message;
  EXPECT_TRUE(ok.accuracy.passed());
  EXPECT_EQ(ok.memory.measured_peak, ok.memory.predicted_peak);
}

TEST(CudaBackends, BiggerThanTheDeviceIsUnsupported) {
  auto backends = makeCudaBackends();
  const WorkloadSpec spec = specOf({64, 64, 64, 65536, 65536, 64, DType::fp32, "none"});
  const RunResult r = runPoint(*backends[0], spec, RunOptions{});
  EXPECT_EQ(r.status, RunStatus::unsupported);
  EXPECT_NE(r.message.find("exceeds the device's"), std::string::npos) << r.message;
}

// A launch the device refuses (grid z above 65535) is status error with the CUDA text, and the
// next point is fine.
TEST(CudaBackends, LaunchErrorIsStatusErrorAndRecovers) {
  auto backends = makeCudaBackends();
  Backend& flash = *backends[2];
  RunOptions opt;
  opt.check = CheckMode::off;
  const RunResult bad = runPoint(flash, specOf({70000, 1, 1, 1, 1, 8, DType::fp16, "none"}), opt);
  EXPECT_EQ(bad.status, RunStatus::error);
  EXPECT_NE(bad.message.find("invalid configuration argument"), std::string::npos) << bad.message;
  opt.check = CheckMode::automatic;
  const RunResult good = runPoint(flash, specOf({1, 2, 2, 97, 97, 64, DType::fp16, "causal"}), opt);
  EXPECT_EQ(good.status, RunStatus::ok) << good.message;
  EXPECT_TRUE(good.accuracy.passed());
}

int main(int argc, char** argv) {
  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (!info.available) {
    std::fprintf(stderr, "SKIPPED: no usable CUDA device (%s); the GPU tests need one\n", info.reason.c_str());
    return 77;
  }
  std::printf("device: %s, compute capability %d.%d, %d SMs\n", info.name.c_str(), info.caps.cc_major,
              info.caps.cc_minor, info.sm_count);
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
