#include "kernels/cpu/softmax_math.h"

#include <bit>
#include <cmath>
#include <limits>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATTNSCOPE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNSCOPE_CPU_CLONES
#endif

namespace attnscope::cpu {
namespace {

// The reductions carry `omp simd` (built with -fopenmp-simd, no OpenMP runtime): without it
// the compiler may not reorder a float sum and would leave those loops scalar.

// 2^x for x in about [-126, 128): split x = n + r with n an integer and r in [-0.5, 0.5], take
// 2^r from its Taylor series (degree 6, error below 2e-7 on that interval) and put n into the
// exponent bits. Branch-free so that loops over it vectorise.
inline float exp2Approx(float x) {
  const bool underflow = x < -126.0f;
  x = x < -126.0f ? -126.0f : (x > 127.0f ? 127.0f : x);
  // Adding 1.5 * 2^23 rounds to an integer in the low mantissa bits (round to nearest).
  const float magic = 12582912.0f;
  const float shifted = x + magic;
  const float n = shifted - magic;
  const float r = x - n;
  const int32_t ni = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(magic);
  constexpr float c1 = 0.693147180559945f, c2 = 0.240226506959101f, c3 = 0.0555041086648216f,
                  c4 = 0.00961812910762848f, c5 = 0.00133335581464284f, c6 = 0.000154035303933816f;
  float p = c6;
  p = p * r + c5;
  p = p * r + c4;
  p = p * r + c3;
  p = p * r + c2;
  p = p * r + c1;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((ni + 127) << 23);
  return underflow ? 0.0f : p * scale;
}

}  // namespace

ATTNSCOPE_CPU_CLONES
float rowMax(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

ATTNSCOPE_CPU_CLONES
float exp2Shifted(const float* in, float* out, int64_t n, float shift, float k) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) {
    const float p = exp2Approx((in[j] - shift) * k);
    out[j] = p;
    sum += p;
  }
  return sum;
}

ATTNSCOPE_CPU_CLONES
void applyKeepMask(float* x, const uint8_t* keep, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) x[j] = keep[j] ? x[j] : ninf;
}

void fillRow(float* x, int64_t n, float value) {
  for (int64_t j = 0; j < n; ++j) x[j] = value;
}

ATTNSCOPE_CPU_CLONES
void scaleRow(float* x, int64_t n, float a) {
  for (int64_t j = 0; j < n; ++j) x[j] *= a;
}

}  // namespace attnscope::cpu
