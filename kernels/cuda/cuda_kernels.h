#pragma once
// Host entry points of the kernels (.cu files). Each launch is checked: a failed launch throws
// std::runtime_error with the CUDA error text.

#include <cuda_runtime.h>

#include "kernels/cuda/flash_params.h"

namespace attnscope::cuda {

// Dispatches on dtype and head-dim bucket to a compiled instance (see kernel_selection.h).
void launchFlashForward(const FlashParams& p, cudaStream_t stream);
void launchFlashForwardFp16(const FlashParams& p, cudaStream_t stream);
void launchFlashForwardBf16(const FlashParams& p, cudaStream_t stream);
void launchFlashForwardFp32(const FlashParams& p, cudaStream_t stream);

// cuda.flash's backward: the dK dV kernel, then the dQ kernel (flash_bwd.cu).
void launchFlashBackwardKeys(const FlashBwdParams& p, cudaStream_t stream);
void launchFlashBackwardQueries(const FlashBwdParams& p, cudaStream_t stream);

void launchMaskToBias(const MaskToBiasParams& p, cudaStream_t stream);
void launchMaskedSoftmax(const SoftmaxParams& p, cudaStream_t stream);
void launchSoftmaxBackward(const SoftmaxBackwardParams& p, cudaStream_t stream);

}  // namespace attnscope::cuda
