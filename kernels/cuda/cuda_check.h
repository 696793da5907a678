#pragma once
// Checked CUDA runtime calls: a failure throws std::runtime_error naming the call and carrying
// the runtime's own error text, which the run engine turns into status error.

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace attnscope::cuda {

[[noreturn]] inline void throwCudaError(cudaError_t err, const char* what, const char* file, int line) {
  // Clear a non-sticky error so the next sweep point starts clean (sticky ones stay: the context
  // is lost and every later call reports it).
  (void)cudaGetLastError();
  throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(err) + " (" +
                           cudaGetErrorName(err) + ", " + file + ":" + std::to_string(line) + ")");
}

// After a kernel launch: launch-configuration errors surface here, faults at the next sync.
inline void checkLaunch(const char* kernel, const char* file, int line) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throwCudaError(err, kernel, file, line);
}

}  // namespace attnscope::cuda

#define ATTNSCOPE_CUDA_CHECK(call)                                                     \
  do {                                                                                 \
    cudaError_t attnscope_err_ = (call);                                               \
    if (attnscope_err_ != cudaSuccess)                                                 \
      ::attnscope::cuda::throwCudaError(attnscope_err_, #call, __FILE__, __LINE__);    \
  } while (0)

#define ATTNSCOPE_CHECK_LAUNCH(kernel) ::attnscope::cuda::checkLaunch(kernel, __FILE__, __LINE__)
