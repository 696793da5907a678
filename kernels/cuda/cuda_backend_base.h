#pragma once
// What the CUDA backends share: device 0, availability from the runtime, the device allocator,
// and support() built from the checks every CUDA backend needs (deviceProblems) plus the
// backend's own (backendProblems, virtual): a new CUDA backend adds its checks by overriding,
// not by joining a list of kinds here.

#include "core/backend/backend.h"
#include "kernels/cuda/kernel_selection.h"

namespace attnscope::cuda {

class CudaBackendBase : public Backend {
 public:

  std::string device() const override { return "cuda:0"; }
  Availability availability() const override;
  // Unavailability first (with the runtime's reason), then every device and spec problem.
  Support support(const WorkloadSpec& spec) const override;
  int64_t memoryAvailable() const override;
  std::unique_ptr<TrackingAllocator> makeAllocator() const override;

 protected:
  // Throws std::runtime_error with the reason when the device is unavailable.
  void requireDevice() const;
  // This backend's own reasons it cannot run the spec on a device with these capabilities.
  virtual std::vector<std::string> backendProblems(const WorkloadSpec& spec, const DeviceCaps& caps) const = 0;
  // The part of backendProblems that holds on any device (said even without a GPU).
  virtual std::vector<std::string> specProblems(const WorkloadSpec& spec) const = 0;
};

}  // namespace attnscope::cuda
