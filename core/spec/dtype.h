#pragma once
// Element types of attention inputs and their conversions. fp16 and bf16 values are stored in
// their own 16-bit formats and computed in fp32; conversions round to nearest even.

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnscope {

enum class DType { fp32, fp16, bf16 };

std::string_view toString(DType d);
std::optional<DType> parseDType(std::string_view s);
inline constexpr std::string_view kDTypeChoices = "fp32, fp16, bf16";

constexpr int64_t bytesPerElement(DType d) { return d == DType::fp32 ? 4 : 2; }

inline uint16_t floatToBf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
inline float bf16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);

// Rounds a float to the nearest value representable in d (identity for fp32).
inline float roundTo(DType d, float f) {
  switch (d) {
    case DType::fp16: return halfToFloat(floatToHalf(f));
    case DType::bf16: return bf16ToFloat(floatToBf16(f));
    default: return f;
  }
}

}  // namespace attnscope
