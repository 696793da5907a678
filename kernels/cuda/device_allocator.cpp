#include "kernels/cuda/device_allocator.h"

#include <cuda_runtime.h>

namespace attnscope::cuda {

DeviceAllocator::DeviceAllocator(int device, int64_t limit_bytes)
    : TrackingAllocator(MemoryKind::device, static_cast<uint32_t>(device), limit_bytes), device_(device) {}

DeviceAllocator::~DeviceAllocator() = default;

void* DeviceAllocator::rawAllocate(int64_t bytes) {
  if (cudaSetDevice(device_) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  void* p = nullptr;
  if (cudaMalloc(&p, static_cast<size_t>(bytes)) != cudaSuccess) {
    // cudaErrorMemoryAllocation is not sticky, but it stays as the "last error" until read.
    (void)cudaGetLastError();
    return nullptr;
  }
  return p;
}

void DeviceAllocator::rawFree(void* p) {
  // cudaFree waits for the device; an error here (a lost context) cannot be acted on, and
  // throwing from a Buffer destructor would terminate, so it is read and dropped.
  if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
}

int64_t DeviceAllocator::freeBytesHint() const {
  size_t free_b = 0, total_b = 0;
  if (cudaSetDevice(device_) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(free_b);
}

std::string DeviceAllocator::where() const { return "cuda:" + std::to_string(device_) + " device"; }

}  // namespace attnscope::cuda
