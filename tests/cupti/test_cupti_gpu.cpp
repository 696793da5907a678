// CUPTI on a real GPU (ctest label gpu; exits 77, a skip, where no device is usable). Checks that
// what CUPTI 13 actually writes maps the way the synthetic adapter tests assume: kernel launch
// configuration, copies, sets, device allocations and frees, stream-ordered pool growth, and
// timestamps on the host steady clock.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/base/clock.h"
#include "core/cupti/cupti_capture.h"
#include "core/trace/memory_timeline.h"

using namespace attnscope;

cudaError_t launchFill(float* p, int n, float v, int block, cudaStream_t stream);  // fill_kernel.cu

#define CHECK_CUDA(call)                                                                      \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_);                    \
  } while (0)

TEST(CuptiGpu, CapturesKernelsCopiesSetsAndMemory) {
  CuptiCapture& capture = CuptiCapture::start();  // before the first CUDA call
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no usable CUDA device: skipped (%s)\n", capture.note().c_str());
    std::exit(77);
  }
  ASSERT_TRUE(capture.active()) << capture.note();
  CHECK_CUDA(cudaFree(nullptr));  // create the context outside the measured run

  const int n = 1 << 24;  // 64 MiB of floats
  const size_t bytes = sizeof(float) * n;
  const int64_t host_begin = nowNs();
  capture.beginRun();
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, bytes));
  CHECK_CUDA(cudaMemsetAsync(d, 0, bytes, stream));
  CHECK_CUDA(launchFill(d, n, 1.0f, 256, stream));
  float* pooled = nullptr;
  CHECK_CUDA(cudaMallocAsync(&pooled, bytes / 2, stream));
  CHECK_CUDA(cudaFreeAsync(pooled, stream));
  std::vector<float> host(n);
  CHECK_CUDA(cudaMemcpyAsync(host.data(), d, bytes, cudaMemcpyDeviceToHost, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  CHECK_CUDA(cudaFree(d));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaDeviceSynchronize());
  Trace t = capture.endRun();
  const int64_t host_end = nowNs();
  EXPECT_EQ(host[n - 1], 1.0f);

  EXPECT_EQ(t.dropped_records, 0) << t.capture_note;
  int kernels = 0, sets = 0, copies = 0;
  for (const TraceEvent& e : t.events) {
    EXPECT_EQ(e.source, EventSource::cupti);
    // Device times converted onto the host clock land inside the host bracket (1 ms slack).
    EXPECT_GE(e.start_ns, host_begin - 1'000'000) << toString(e.kind) << " " << e.name;
    EXPECT_LE(e.end_ns, host_end + 1'000'000) << toString(e.kind) << " " << e.name;
    if (e.kind == EventKind::kernel && e.name.find("fillKernel") != std::string::npos) {
      ++kernels;
      EXPECT_EQ(e.kernel.grid[0], n / 256);
      EXPECT_EQ(e.kernel.block[0], 256);
      EXPECT_GT(e.kernel.registers, 0);
      EXPECT_GT(e.end_ns, e.start_ns);
    }
    if (e.kind == EventKind::memset && e.bytes == static_cast<int64_t>(bytes)) ++sets;
    if (e.kind == EventKind::memcpy && e.name == "DtoH" && e.bytes == static_cast<int64_t>(bytes)) ++copies;
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(sets, 1);
  EXPECT_EQ(copies, 1);

  MemoryTimeline tl(t.events, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt});
  EXPECT_GE(tl.peakBytes(), static_cast<int64_t>(bytes));
  EXPECT_EQ(tl.unknownFrees(), 0);
  EXPECT_EQ(tl.doubleAllocs(), 0);
  // The stream-ordered allocation grew the device's default pool.
  EXPECT_GE(tl.poolPeakBytes(), static_cast<int64_t>(bytes / 2));
  std::printf("CUPTI: %zu events, peak %lld B, pool peak %lld B, note \"%s\"\n", t.events.size(),
              static_cast<long long>(tl.peakBytes()), static_cast<long long>(tl.poolPeakBytes()),
              t.capture_note.c_str());
}
