#pragma once
// Element types of the kernel bodies written once for device and host (flash_bwd_body.h,
// softmax_bwd_body.h): Storage is the type in memory, load and store convert to and from fp32
// (round to nearest). The host tests define the same three over uint16_t with core's conversions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace attnscope::cuda {

struct F32 {
  using Storage = float;
  __device__ static float load(const float* p, int64_t i) { return p[i]; }
  __device__ static void store(float* p, int64_t i, float x) { p[i] = x; }
};
struct F16 {
  using Storage = __half;
  __device__ static float load(const __half* p, int64_t i) { return __half2float(p[i]); }
  __device__ static void store(__half* p, int64_t i, float x) { p[i] = __float2half_rn(x); }
};
struct BF16 {
  using Storage = __nv_bfloat16;
  __device__ static float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
  __device__ static void store(__nv_bfloat16* p, int64_t i, float x) { p[i] = __float2bfloat16_rn(x); }
};

// A thread block as the bodies see it: thread index, thread count, barrier, and a block-wide
// sum (every thread gets the total; blockDim.x a multiple of 32, at most kMaxWarps warps).
struct CudaBlock {
  static constexpr int kMaxWarps = 32;
  __device__ int64_t tid() const { return threadIdx.x; }
  __device__ int64_t threads() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
  __device__ float sum(float part) const {
    __shared__ float partial[kMaxWarps];
#pragma unroll
    for (int off = 16; off > 0; off /= 2) part += __shfl_xor_sync(0xffffffffu, part, off);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = part;
    __syncthreads();
    float total = 0.f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w) total += partial[w];
    __syncthreads();  // partial may be reused by the next sum
    return total;
  }
};

}  // namespace attnscope::cuda
