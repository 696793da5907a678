// The kernels of the materialising path (cuda.math, cuda.chunked) that are not GEMMs: the dense
// boolean mask to an additive mask, the masked softmax writing P, and (pass = train) the softmax
// backward turning dP into dS.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_elems.cuh"
#include "kernels/cuda/softmax_bwd_body.h"

namespace attnscope::cuda {
namespace {

template <typename T>
__device__ __forceinline__ float toFloat(T x) {
  return static_cast<float>(x);
}
template <>
__device__ __forceinline__ float toFloat<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ __forceinline__ float toFloat<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T>
__device__ __forceinline__ T fromFloat(float x) {
  return static_cast<T>(x);
}
template <>
__device__ __forceinline__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T>
__global__ void maskToBias(const MaskToBiasParams p) {
  const int64_t per_plane = p.rows * p.seq_kv;
  const int64_t total = p.planes * per_plane;
  for (int64_t idx = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; idx < total;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t plane = idx / per_plane, rem = idx % per_plane;
    const int64_t r = rem / p.seq_kv, j = rem % p.seq_kv;
    const uint8_t keep = p.mask[(plane * p.seq_q + p.row0 + r) * p.seq_kv + j];
    static_cast<T*>(p.bias)[idx] = fromFloat<T>(keep ? 0.f : -INFINITY);
  }
}

// Running (max, sum of exp(x - max)) pairs, merged without producing NaN for empty ones.
struct MaxSum {
  float m;
  float l;
};
__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};
  return {m, a.l * expf(a.m - m) + b.l * expf(b.m - m)};
}

constexpr int kSoftmaxThreads = 256;

// One block per row of S: (chunk row, head, batch) = (blockIdx.x, blockIdx.y, blockIdx.z).
template <typename T>
__global__ void __launch_bounds__(kSoftmaxThreads) maskedSoftmax(const SoftmaxParams p) {
  const int64_t r = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int64_t plane = static_cast<int64_t>(b) * p.heads + h;
  const int64_t offset = (plane * p.rows + r) * p.seq_kv;
  const T* s = static_cast<const T*>(p.scores) + offset;
  T* out = static_cast<T*>(p.probs) + offset;
  const T* bias = p.bias ? static_cast<const T*>(p.bias) + (p.bias_plane_stride ? plane : 0) * p.bias_plane_stride +
                               r * p.seq_kv
                         : nullptr;
  const TileMask mk = static_cast<TileMask>(p.mask_kind);
  const int64_t i = p.row0 + r;
  const int64_t lo = keyBegin(mk, p.mask_width, i, p.seq_q, p.seq_kv);
  const int64_t hi = keyEnd(mk, p.mask_width, i, p.seq_q, p.seq_kv);

  auto value = [&](int64_t j) -> float {
    if (j < lo || j >= hi) return -INFINITY;
    float x = toFloat(s[j]);
    if (bias) x += toFloat(bias[j]);
    return x;
  };

  MaxSum acc{-INFINITY, 0.f};
  for (int64_t j = threadIdx.x; j < p.seq_kv; j += kSoftmaxThreads) {
    const float x = value(j);
    if (x == -INFINITY) continue;
    if (x > acc.m) {
      acc.l = acc.l * expf(acc.m - x) + 1.f;
      acc.m = x;
    } else {
      acc.l += expf(x - acc.m);
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, acc.m, o), __shfl_xor_sync(0xffffffffu, acc.l, o)};
    acc = merge(acc, other);
  }
  __shared__ MaxSum partial[kSoftmaxThreads / 32];
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = acc;
  __syncthreads();
  MaxSum row{-INFINITY, 0.f};
#pragma unroll
  for (int w = 0; w < kSoftmaxThreads / 32; ++w) row = merge(row, partial[w]);

  // A row with no visible key (max -inf) gets P = 0, so O = 0 as the semantics require.
  const float inv = row.l > 0.f ? 1.f / row.l : 0.f;
  for (int64_t j = threadIdx.x; j < p.seq_kv; j += kSoftmaxThreads) {
    const float x = value(j);
    out[j] = fromFloat<T>(x == -INFINITY ? 0.f : expf(x - row.m) * inv);
  }
}

// One block per row of dS: (query, head, batch) = (blockIdx.x, blockIdx.y, blockIdx.z); the body
// is softmax_bwd_body.h's, which the host tests also run.
template <typename Elem>
__global__ void __launch_bounds__(kSoftmaxThreads) softmaxBackward(const SoftmaxBackwardParams p) {
  softmaxbwd::row<Elem>(CudaBlock{}, p, blockIdx.x, blockIdx.y, blockIdx.z);
}

template <typename Elem>
void launchSoftmaxBackwardT(const SoftmaxBackwardParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.seq_q), static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  softmaxBackward<Elem><<<grid, kSoftmaxThreads, 0, stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH("softmax_backward");
}

template <typename T>
void launchMaskToBiasT(const MaskToBiasParams& p, cudaStream_t stream) {
  const int64_t total = p.planes * p.rows * p.seq_kv;
  const int64_t blocks = (total + 255) / 256;
  maskToBias<T><<<static_cast<unsigned>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536), 256, 0, stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH("mask_to_bias");
}

template <typename T>
void launchSoftmaxT(const SoftmaxParams& p, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(p.rows), static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  maskedSoftmax<T><<<grid, kSoftmaxThreads, 0, stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH("masked_softmax");
}

}  // namespace

void launchMaskToBias(const MaskToBiasParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case ElemType::fp32: return launchMaskToBiasT<float>(p, stream);
    case ElemType::fp16: return launchMaskToBiasT<__half>(p, stream);
    case ElemType::bf16: return launchMaskToBiasT<__nv_bfloat16>(p, stream);
  }
}

void launchMaskedSoftmax(const SoftmaxParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case ElemType::fp32: return launchSoftmaxT<float>(p, stream);
    case ElemType::fp16: return launchSoftmaxT<__half>(p, stream);
    case ElemType::bf16: return launchSoftmaxT<__nv_bfloat16>(p, stream);
  }
}

void launchSoftmaxBackward(const SoftmaxBackwardParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case ElemType::fp32: return launchSoftmaxBackwardT<F32>(p, stream);
    case ElemType::fp16: return launchSoftmaxBackwardT<F16>(p, stream);
    case ElemType::bf16: return launchSoftmaxBackwardT<BF16>(p, stream);
  }
}

}  // namespace attnscope::cuda
