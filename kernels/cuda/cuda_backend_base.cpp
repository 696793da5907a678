#include "kernels/cuda/cuda_backend_base.h"

#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/device_allocator.h"

namespace attnscope::cuda {

Availability CudaBackendBase::availability() const {
  const CudaDeviceInfo& info = cudaDeviceInfo();
  if (info.available) return {};
  return {false, "GPU backends unavailable: " + info.reason};
}

// kind attention runs forward and train on cuda.math and cuda.flash (cuda.chunked refuses train
// in its own specProblems); kind layer and additive masks are refused, never faked. (An additive
// mask would fit cuda.math's bias path, but that path holds the bias in the input type, which
// rounds an fp32 mask again; not done without a GPU to check it on.)
static void addWorkloadProblems(const WorkloadSpec& spec, std::vector<std::string>& reasons) {
  if (spec.kind == WorkloadKind::layer) reasons.push_back("kind layer is not implemented by the CUDA backends yet");
  if (spec.mask.kind == MaskKind::additive)
    reasons.push_back("mask additive (a float attn_mask) is not implemented by the CUDA backends yet; the cpu.* and "
                      "torch.* backends run it");
  if (spec.pass != Pass::train && spec.checkpoint == Checkpoint::attention)
    reasons.push_back("checkpoint attention needs pass train (a forward pass saves nothing for a backward)");
}

Support CudaBackendBase::support(const WorkloadSpec& spec) const {
  Support s;
  const CudaDeviceInfo& info = cudaDeviceInfo();
  if (!info.available) {
    s.reasons.push_back("GPU backends unavailable: " + info.reason);
    addWorkloadProblems(spec, s.reasons);
    // Spec problems that hold on any device are still worth saying.
    for (auto& p : specProblems(spec)) s.reasons.push_back(std::move(p));
    return s;
  }
  s.reasons = deviceProblems(spec, info.caps, cudaBuiltArchitectures(), plan(spec).peakBytes());
  for (auto& p : backendProblems(spec, info.caps)) s.reasons.push_back(std::move(p));
  addWorkloadProblems(spec, s.reasons);
  return s;
}

int64_t CudaBackendBase::memoryAvailable() const { return cudaFreeBytes(0); }

std::unique_ptr<TrackingAllocator> CudaBackendBase::makeAllocator() const {
  return std::make_unique<DeviceAllocator>(0);
}

void CudaBackendBase::requireDevice() const {
  const CudaDeviceInfo& info = cudaDeviceInfo();
  if (!info.available) throw std::runtime_error("GPU backends unavailable: " + info.reason);
  ATTNSCOPE_CUDA_CHECK(cudaSetDevice(info.device));
}

}  // namespace attnscope::cuda
