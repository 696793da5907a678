#include "kernels/cuda/cuda_device.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <mutex>

#ifndef ATTNSCOPE_CUDA_ARCHITECTURES
#define ATTNSCOPE_CUDA_ARCHITECTURES ""
#endif

namespace attnscope::cuda {
namespace {

std::string versionText(int v) {  // 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

CudaDeviceInfo probe() {
  CudaDeviceInfo info;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    info.reason = cudaGetErrorString(err);
    (void)cudaGetLastError();
    return info;
  }
  if (count == 0) {
    info.reason = "no CUDA device is visible";
    return info;
  }
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    err = cudaGetDeviceProperties(&prop, d);
    if (err != cudaSuccess) {
      if (d == 0) {
        info.reason = cudaGetErrorString(err);
        (void)cudaGetLastError();
        return info;
      }
      (void)cudaGetLastError();
      continue;
    }
    GpuInfo g;
    g.index = d;
    g.name = prop.name;
    g.cc_major = prop.major;
    g.cc_minor = prop.minor;
    g.sm_count = prop.multiProcessorCount;
    g.memory_total = static_cast<int64_t>(prop.totalGlobalMem);
    info.gpus.push_back(g);
    if (d == 0) {
      info.name = prop.name;
      info.sm_count = prop.multiProcessorCount;
      info.caps.cc_major = prop.major;
      info.caps.cc_minor = prop.minor;
      info.caps.memory_total = static_cast<int64_t>(prop.totalGlobalMem);
      info.caps.max_smem_per_block = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    }
  }
  // Creating the context here turns a broken set-up (e.g. a device in use exclusively by another
  // process) into an unavailability reason instead of a failure on the first run.
  err = cudaSetDevice(0);
  if (err == cudaSuccess) err = cudaFree(nullptr);
  if (err != cudaSuccess) {
    info.reason = cudaGetErrorString(err);
    (void)cudaGetLastError();
    return info;
  }
  info.available = true;
  return info;
}

std::string cudnnVersion() {
  // cuDNN is optional and not linked: ask it through dlopen when the machine has it.
  for (const char* lib : {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"}) {
    void* h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (!h) continue;
    using GetVersion = size_t (*)();
    auto fn = reinterpret_cast<GetVersion>(dlsym(h, "cudnnGetVersion"));
    std::string out;
    if (fn) {
      const size_t v = fn();  // 9.x: major * 10000 + minor * 100 + patch; 8.x: major * 1000 + ...
      const size_t major = v >= 90000 ? v / 10000 : v / 1000;
      const size_t minor = v >= 90000 ? (v % 10000) / 100 : (v % 1000) / 100;
      const size_t patch = v % 100;
      out = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    }
    dlclose(h);
    return out;
  }
  return {};
}

}  // namespace

const CudaDeviceInfo& cudaDeviceInfo() {
  static std::once_flag once;
  static CudaDeviceInfo info;
  std::call_once(once, [] { info = probe(); });
  return info;
}

int64_t cudaFreeBytes(int device) {
  if (!cudaDeviceInfo().available) return -1;
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(free_b);
}

std::string cudaBuiltArchitectureList() { return ATTNSCOPE_CUDA_ARCHITECTURES; }

const std::vector<int>& cudaBuiltArchitectures() {
  static const std::vector<int> archs = builtArchitectures(ATTNSCOPE_CUDA_ARCHITECTURES);
  return archs;
}

void fillCudaEnvironment(Environment& env) {
  const CudaDeviceInfo& info = cudaDeviceInfo();
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) env.runtime_version = versionText(v);
  v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess && v > 0) env.driver_version = versionText(v);
  (void)cudaGetLastError();
  int major = 0, minor = 0, patch = 0;
  // cublasGetProperty reads the library's own version; it needs no handle and no device.
  if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
    env.cublas_version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  env.cudnn_version = cudnnVersion();
  if (info.available)
    env.gpus = info.gpus;
  else
    env.gpu_note = "GPU backends unavailable: " + info.reason;
}

}  // namespace attnscope::cuda
