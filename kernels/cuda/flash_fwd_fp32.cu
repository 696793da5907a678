// cuda.flash, fp32 instances (SIMT): one per head-dim bucket (64, 128, 256).
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/flash_fwd_simt.cuh"
#include "kernels/cuda/static_switch.h"

namespace attnscope::cuda {

void launchFlashForwardFp32(const FlashParams& p, cudaStream_t stream) {
  ATTNSCOPE_HEADDIM_SWITCH(p.head_dim, kD, [&] { simt::launchSimt<kD>(p, stream); });
}

}  // namespace attnscope::cuda
