// cuda.flash's backward for pass = train: the FlashAttention-2 algorithm on SIMT units. The
// forward saved O and the log-sum-exp; here every (query block, key tile) pair recomputes
//   P = exp(scale * Q K^T - lse),  dP = dO V^T,  dS = P * (dP - delta),  delta_i = dO_i . O_i
// (delta recomputed per query block from O and dO: D products per row, no [B, H, Lq] buffer).
//
// dQ in a separate kernel, not with FA2's atomic adds. Kernel 1 (one block per key tile of a KV
// head) accumulates dK and dV over every query block of every head of the GQA group in shared
// memory; kernel 2 (one block per query block of a head) accumulates dQ over its key tiles.
// Why: atomics would need a [B, H, Lq, D] fp32 dQ accumulator (a buffer the plan must carry, plus
// a conversion kernel for fp16/bf16) and make the sums depend on block scheduling, so two runs of
// one point would differ in the last bits; the second kernel costs recomputing P and dP once
// more (about 7 tile products per pair instead of 5). cpu.flash makes the same choice.
//
// Inputs are converted to fp32 in shared memory and every product is fp32 (correctness over
// speed: no tensor cores, runtime head_dim); the gradients are rounded to the input type once.
// Tiles, layout and grids come from flash_bwd_tiling.h and the kernel bodies from
// flash_bwd_body.h, both shared with the host tests (which run the bodies one thread per block).
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_elems.cuh"
#include "kernels/cuda/flash_bwd_body.h"
#include "kernels/cuda/flash_bwd_tiling.h"

namespace attnscope::cuda {
namespace {

template <typename Elem>
__global__ void __launch_bounds__(kFlashBwdThreads) flashBwdKeys(const FlashBwdParams bp) {
  extern __shared__ float smem[];
  flashbwd::keyTile<Elem>(CudaBlock{}, smem, bp, blockIdx.x, blockIdx.y, blockIdx.z);
}

template <typename Elem>
__global__ void __launch_bounds__(kFlashBwdThreads) flashBwdQueries(const FlashBwdParams bp) {
  extern __shared__ float smem[];
  flashbwd::queryBlock<Elem>(CudaBlock{}, smem, bp, blockIdx.x, blockIdx.y, blockIdx.z);
}

template <typename Kernel>
void launch(Kernel kernel, const Grid3& g, const FlashBwdParams& p, cudaStream_t stream, const char* name) {
  const int64_t smem = flashBwdSmemBytes(p.fwd.head_dim);
  if (smem > 48 * 1024)
    ATTNSCOPE_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>(g.x), static_cast<unsigned>(g.y), static_cast<unsigned>(g.z));
  kernel<<<grid, kFlashBwdThreads, static_cast<size_t>(smem), stream>>>(p);
  ATTNSCOPE_CHECK_LAUNCH(name);
}

}  // namespace

void launchFlashBackwardKeys(const FlashBwdParams& p, cudaStream_t stream) {
  const Grid3 g = flashBwdKeyGrid(p.fwd.batch, p.fwd.kv_heads, p.fwd.seq_kv, p.fwd.head_dim);
  switch (p.fwd.dtype) {
    case ElemType::fp32: return launch(flashBwdKeys<F32>, g, p, stream, "flash_bwd_keys<fp32>");
    case ElemType::fp16: return launch(flashBwdKeys<F16>, g, p, stream, "flash_bwd_keys<fp16>");
    case ElemType::bf16: return launch(flashBwdKeys<BF16>, g, p, stream, "flash_bwd_keys<bf16>");
  }
}

void launchFlashBackwardQueries(const FlashBwdParams& p, cudaStream_t stream) {
  const Grid3 g = flashBwdQueryGrid(p.fwd.batch, p.fwd.heads, p.fwd.seq_q, p.fwd.head_dim);
  switch (p.fwd.dtype) {
    case ElemType::fp32: return launch(flashBwdQueries<F32>, g, p, stream, "flash_bwd_queries<fp32>");
    case ElemType::fp16: return launch(flashBwdQueries<F16>, g, p, stream, "flash_bwd_queries<fp16>");
    case ElemType::bf16: return launch(flashBwdQueries<BF16>, g, p, stream, "flash_bwd_queries<bf16>");
  }
}

}  // namespace attnscope::cuda
