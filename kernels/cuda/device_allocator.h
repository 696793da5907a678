#pragma once
// Device memory for every CUDA backend: cudaMalloc / cudaFree underneath the tracking allocator,
// so each allocation and free is recorded with a timestamp and counted against the plan.

#include "core/backend/tracking_allocator.h"

namespace attnscope::cuda {

class DeviceAllocator final : public TrackingAllocator {
 public:
  explicit DeviceAllocator(int device = 0, int64_t limit_bytes = -1);
  ~DeviceAllocator() override;

 protected:
  // nullptr when cudaMalloc fails; the error is cleared so later calls are unaffected, and the
  // base class throws OutOfMemory with the bytes requested and freeBytesHint().
  void* rawAllocate(int64_t bytes) override;
  void rawFree(void* p) override;
  int64_t freeBytesHint() const override;  // cudaMemGetInfo
  std::string where() const override;

 private:
  int device_;
};

}  // namespace attnscope::cuda
