#pragma once
// What the CUDA runtime says about this machine, probed once: whether a device is usable (and
// the runtime's own error text when not), device 0's properties, and the library versions for
// the environment record.

#include <cstdint>
#include <string>
#include <vector>

#include "core/result/environment.h"
#include "kernels/cuda/kernel_selection.h"

namespace attnscope::cuda {

struct CudaDeviceInfo {
  bool available = false;
  std::string reason;  // why not, in the runtime's words, e.g. "CUDA driver version is insufficient ..."
  int device = 0;
  std::string name;
  int sm_count = 0;
  DeviceCaps caps;
  std::vector<GpuInfo> gpus;  // every visible device
};

// Probed on first use (cudaGetDeviceCount, cudaGetDeviceProperties); thread-safe.
const CudaDeviceInfo& cudaDeviceInfo();

// Free bytes on the device now (cudaMemGetInfo), -1 when unavailable.
int64_t cudaFreeBytes(int device = 0);

// The architectures this build compiled kernels for (CMAKE_CUDA_ARCHITECTURES).
const std::vector<int>& cudaBuiltArchitectures();
std::string cudaBuiltArchitectureList();

// Fills GPUs, driver / runtime / cuBLAS / cuDNN versions, or gpu_note when no device is usable.
void fillCudaEnvironment(Environment& env);

}  // namespace attnscope::cuda
