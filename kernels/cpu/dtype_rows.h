#pragma once
// Conversions between tensors stored in their dtype (fp32, fp16 or bf16 bytes) and the fp32
// rows the CPU kernels compute on.

#include <cstdint>

#include "core/spec/dtype.h"

namespace attnscope::cpu {

// out[i] = scale * element (first + i) of the tensor at base, for i in [0, n).
void toFloat(DType dtype, const uint8_t* base, int64_t first, int64_t n, float* out, float scale = 1.0f);

// x[i] += scale * element (first + i) of the tensor at base, for i in [0, n): an additive mask's
// row on a row of scores (scale > 0, so a -inf element makes the score -inf).
void addToFloat(DType dtype, const uint8_t* base, int64_t first, int64_t n, float* x, float scale = 1.0f);

// Element (first + i) of the tensor at base = in[i] rounded to the dtype, for i in [0, n).
void fromFloat(DType dtype, const float* in, int64_t n, uint8_t* base, int64_t first);

// The fp32 view of a tensor stored as fp32; nullptr for other dtypes.
inline const float* asFloat(DType dtype, const uint8_t* base) {
  return dtype == DType::fp32 ? reinterpret_cast<const float*>(base) : nullptr;
}

}  // namespace attnscope::cpu
