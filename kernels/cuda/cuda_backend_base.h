#pragma once
// What the three CUDA backends share: device 0, availability from the runtime, the device
// allocator, and support() built from the device's capabilities and the backend's plan.

#include "core/backend.h"
#include "kernels/cuda/kernel_selection.h"

namespace attnscope::cuda {

class CudaBackendBase : public Backend {
 public:
  explicit CudaBackendBase(CudaFamily family) : family_(family) {}

  std::string device() const override { return "cuda:0"; }
  Availability availability() const override;
  // Unavailability first (with the runtime's reason), then every device and spec problem.
  Support support(const WorkloadSpec& spec) const override;
  int64_t memoryAvailable() const override;
  std::unique_ptr<TrackingAllocator> makeAllocator() const override;

 protected:
  // Throws std::runtime_error with the reason when the device is unavailable.
  void requireDevice() const;

 private:
  CudaFamily family_;
};

}  // namespace attnscope::cuda
