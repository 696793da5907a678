#include "core/spec/dtype.h"

#include <cstring>

namespace attnscope {

std::string_view toString(DType d) {
  switch (d) {
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view s) {
  if (s == "fp32" || s == "float32") return DType::fp32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::fp16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  return std::nullopt;
}

uint16_t floatToHalf(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) return static_cast<uint16_t>(sign | (mag > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (mag < 0x38800000u) {                                               // subnormal or zero
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14 + (113 - e) ... shift into the 10-bit field
    uint32_t half = m >> (shift);
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t e = (mag >> 23) - 112;
  uint32_t m = mag & 0x7fffffu;
  uint32_t half = (e << 10) | (m >> 13);
  uint32_t rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu;
  uint32_t m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return std::bit_cast<float>(sign);
    float v = static_cast<float>(m) * (1.0f / 16777216.0f);  // m * 2^-24
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

}  // namespace attnscope
