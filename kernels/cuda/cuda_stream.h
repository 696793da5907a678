#pragma once
// One execution's CUDA stream and the pair of events that time it on the device.

#include <cuda_runtime.h>

#include <cstdint>

#include "core/backend/backend.h"
#include "core/inputs/host_inputs.h"
#include "core/backend/tracking_allocator.h"

namespace attnscope::cuda {

class CudaStream {
 public:
  CudaStream();
  ~CudaStream();
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }
  void startTimer();
  // Records the stop event, waits for it and returns the seconds between the two events. Kernel
  // faults surface here and are thrown with the runtime's text.
  double stopTimer();
  void synchronize();

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

// A tracked device buffer holding a copy of the host tensor's bytes (waits for the copy).
Buffer<uint8_t> uploadTensor(TrackingAllocator& alloc, const void* data, int64_t bytes, const char* tag,
                             CudaStream& stream);

// Q, K, V and (dense masks) the boolean mask copied to tracked device buffers, in that order, as
// every CUDA backend holds them. Throws std::invalid_argument when the mask has the wrong size.
struct DeviceInputs {
  Buffer<uint8_t> q, k, v, mask;
};
DeviceInputs uploadInputs(TrackingAllocator& alloc, const HostInputs& in, int64_t q_bytes, int64_t k_bytes,
                          int64_t v_bytes, int64_t mask_bytes, CudaStream& stream);

// pass = train: G (dO) copied to the device and dQ, dK, dV allocated, under the names the plans
// give them (cuda_plans.h). Throws std::invalid_argument when G is missing or has the wrong size.
struct DeviceGradients {
  Buffer<uint8_t> g, dq, dk, dv;
};
DeviceGradients allocateGradients(TrackingAllocator& alloc, const WorkloadSpec& spec, const HostInputs& in,
                                  CudaStream& stream);
// dQ, dK, dV as float; false when the buffers are empty (a forward pass).
bool downloadGradients(const WorkloadSpec& spec, const DeviceGradients& d, AttentionGradients& out,
                       CudaStream& stream);

// The device tensor [elements] in dtype, converted to float on the host.
void downloadAsFloat(const void* device_data, int64_t elements, DType dtype, std::vector<float>& out,
                     CudaStream& stream);

}  // namespace attnscope::cuda
