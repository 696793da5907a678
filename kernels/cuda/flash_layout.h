#pragma once
// cuda.flash's FlashParams for a spec: strides of the contiguous [B, H, L, D] tensors, sizes,
// scale, element type and mask, pointers left null for the execution to fill. Host logic, so the
// host tests run the backward's kernel bodies (flash_bwd_body.h) with the very parameters the
// backend launches them with.

#include "core/spec/workload_spec.h"
#include "kernels/cuda/flash_params.h"

namespace attnscope::cuda {

FlashParams flashParams(const WorkloadSpec& spec);

}  // namespace attnscope::cuda
