#include <stdexcept>

#include "kernels/cuda/cuda_kernels.h"

namespace attnscope::cuda {

void launchFlashForward(const FlashParams& p, cudaStream_t stream) {
  switch (p.dtype) {
    case ElemType::fp16: return launchFlashForwardFp16(p, stream);
    case ElemType::bf16: return launchFlashForwardBf16(p, stream);
    case ElemType::fp32: return launchFlashForwardFp32(p, stream);
  }
  throw std::invalid_argument("launchFlashForward: unknown element type");
}

}  // namespace attnscope::cuda
