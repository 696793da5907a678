// cuda.flash, fp16 instances: one per head-dim bucket (64, 128, 256).
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/flash_fwd_mma.cuh"
#include "kernels/cuda/static_switch.h"

namespace attnscope::cuda {

void launchFlashForwardFp16(const FlashParams& p, cudaStream_t stream) {
  ATTNSCOPE_HEADDIM_SWITCH(p.head_dim, kD, [&] { mma::launchMmaBucket<__half, kD>(p, stream); });
}

}  // namespace attnscope::cuda
