#include "core/base/uuid.h"

#include <array>
#include <cstdint>
#include <random>

namespace attnscope {
namespace {
std::string format(const std::array<uint8_t, 16>& bytes);
}

std::string newUuid() {
  // std::random_device reads the kernel's getrandom on Linux; one generator per thread.
  thread_local std::random_device device;
  std::array<uint8_t, 16> bytes{};
  for (size_t i = 0; i < bytes.size(); i += 4) {
    const uint32_t v = device();
    for (size_t k = 0; k < 4; ++k) bytes[i + k] = static_cast<uint8_t>(v >> (8 * k));
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  return format(bytes);
}

namespace {

std::string format(const std::array<uint8_t, 16>& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0x0f];
  }
  return out;
}

uint64_t fnv1a(std::string_view text, uint64_t h) {
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string contentUuid(std::string_view text) {
  const uint64_t a = mix(fnv1a(text, 0xcbf29ce484222325ull));
  const uint64_t b = mix(fnv1a(text, 0x84222325cbf29ce4ull) ^ a);
  std::array<uint8_t, 16> bytes{};
  for (size_t k = 0; k < 8; ++k) {
    bytes[k] = static_cast<uint8_t>(a >> (8 * k));
    bytes[8 + k] = static_cast<uint8_t>(b >> (8 * k));
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x80);  // version 8
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);
  return format(bytes);
}

bool isUuid(std::string_view t) {
  if (t.size() != 36) return false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char c = t[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

}  // namespace attnscope
