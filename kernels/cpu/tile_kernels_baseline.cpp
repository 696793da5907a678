// The baseline variant: x86-64's SSE2, which every x86-64 CPU has (on other architectures the
// same code falls back to plain arrays the compiler vectorises as it can).

#include <bit>
#include <cstdint>
#include <limits>

#include "core/spec/dtype.h"
#include "kernels/cpu/tile_kernels.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace attnscope::cpu {
namespace {

#if defined(__SSE2__)
struct Vec {
  using Reg = __m128;
  static constexpr int kWidth = 4;
  static constexpr int kMr = 4;
  static Reg zero() { return _mm_setzero_ps(); }
  static Reg load(const float* p) { return _mm_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm_storeu_ps(p, r); }
  static Reg set1(float x) { return _mm_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
  static Reg mul(Reg a, Reg b) { return _mm_mul_ps(a, b); }
  static float halfToFloat(uint16_t h) { return attnscope::halfToFloat(h); }
};
#else
struct Vec {
  struct Reg {
    float x[4];
  };
  static constexpr int kWidth = 4;
  static constexpr int kMr = 4;
  static Reg zero() { return Reg{}; }
  static Reg load(const float* p) { return Reg{{p[0], p[1], p[2], p[3]}}; }
  static void store(float* p, Reg r) { for (int i = 0; i < 4; ++i) p[i] = r.x[i]; }
  static Reg set1(float x) { return Reg{{x, x, x, x}}; }
  static Reg fma(Reg a, Reg b, Reg c) { for (int i = 0; i < 4; ++i) c.x[i] += a.x[i] * b.x[i]; return c; }
  static Reg mul(Reg a, Reg b) { for (int i = 0; i < 4; ++i) a.x[i] *= b.x[i]; return a; }
  static float halfToFloat(uint16_t h) { return attnscope::halfToFloat(h); }
};
#endif

#include "kernels/cpu/tile_kernels_impl.h"

// 2^x for x in about [-126, 128): split x = n + r with n an integer and r in [-0.5, 0.5], take
// 2^r from its Taylor series (degree 6, error below 2e-7 on that interval) and put n into the
// exponent bits. Arguments below -126 (a masked -inf included) give exactly 0.
inline float exp2Approx(float x) {
  const bool underflow = x < -126.0f;
  x = x < -126.0f ? -126.0f : (x > 127.0f ? 127.0f : x);
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  const float shifted = x + magic;
  const float n = shifted - magic;
  const float r = x - n;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(magic);
  float p = kExp2C6;
  p = p * r + kExp2C5;
  p = p * r + kExp2C4;
  p = p * r + kExp2C3;
  p = p * r + kExp2C2;
  p = p * r + kExp2C1;
  p = p * r + 1.0f;
  return underflow ? 0.0f : p * std::bit_cast<float>((ni + 127) << 23);
}

float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

float exp2Shifted(const float* in, float* out, int64_t n, float shift, float k) {
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) {
    out[j] = exp2Approx((in[j] - shift) * k);
    sum += out[j];
  }
  return sum;
}

void scaleRow(float* x, int64_t n, float a) {
  for (int64_t j = 0; j < n; ++j) x[j] *= a;
}

void pack(DType dtype, const void* src, int64_t ld, bool transposed, int64_t k, int64_t n, float* out) {
  constexpr int NR = kNr<Vec>;
  packScalar<Vec>(dtype, src, ld, transposed, k, 0, (n + NR - 1) / NR * NR, 0, k, n, out);
}

}  // namespace

const TileKernels kTileKernelsBaseline = {CpuIsa::baseline, "baseline x86-64 (SSE2)", kNr<Vec>, Vec::kMr, pack,
                                    gemmStrips<Vec>, gemmStrips<Vec, true>, rowMax, exp2Shifted, scaleRow, nullptr, nullptr, nullptr, nullptr};

}  // namespace attnscope::cpu
