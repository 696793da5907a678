#include "kernels/cpu/dtype_rows.h"

#include <cstring>

namespace attnscope::cpu {

void toFloat(DType dtype, const uint8_t* base, int64_t first, int64_t n, float* out, float scale) {
  switch (dtype) {
    case DType::fp32: {
      const float* src = reinterpret_cast<const float*>(base) + first;
      if (scale == 1.0f)
        std::memcpy(out, src, static_cast<size_t>(n) * sizeof(float));
      else
        for (int64_t i = 0; i < n; ++i) out[i] = scale * src[i];
      return;
    }
    case DType::fp16: {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) out[i] = scale * halfToFloat(src[i]);
      return;
    }
    case DType::bf16: {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) out[i] = scale * bf16ToFloat(src[i]);
      return;
    }
  }
}

void addToFloat(DType dtype, const uint8_t* base, int64_t first, int64_t n, float* x, float scale) {
  switch (dtype) {
    case DType::fp32: {
      const float* src = reinterpret_cast<const float*>(base) + first;
      for (int64_t i = 0; i < n; ++i) x[i] += scale * src[i];
      return;
    }
    case DType::fp16: {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) x[i] += scale * halfToFloat(src[i]);
      return;
    }
    case DType::bf16: {
      const uint16_t* src = reinterpret_cast<const uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) x[i] += scale * bf16ToFloat(src[i]);
      return;
    }
  }
}

void fromFloat(DType dtype, const float* in, int64_t n, uint8_t* base, int64_t first) {
  switch (dtype) {
    case DType::fp32:
      std::memcpy(reinterpret_cast<float*>(base) + first, in, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::fp16: {
      uint16_t* dst = reinterpret_cast<uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) dst[i] = floatToHalf(in[i]);
      return;
    }
    case DType::bf16: {
      uint16_t* dst = reinterpret_cast<uint16_t*>(base) + first;
      for (int64_t i = 0; i < n; ++i) dst[i] = floatToBf16(in[i]);
      return;
    }
  }
}

}  // namespace attnscope::cpu
