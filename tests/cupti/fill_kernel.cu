// A trivial kernel for the CUPTI GPU test; kept apart so the test itself stays C++20.
#include <cuda_runtime.h>

namespace {
__global__ void fillKernel(float* p, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v;
}
}  // namespace

cudaError_t launchFill(float* p, int n, float v, int block, cudaStream_t stream) {
  fillKernel<<<(n + block - 1) / block, block, 0, stream>>>(p, n, v);
  return cudaGetLastError();
}
