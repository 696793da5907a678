#include "kernels/cpu/dtype_rows.h"

#include <cstring>
#include <stdexcept>

#include "kernels/cpu/cpu_isa.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::cpu {
namespace {

// fp16 rows through F16C (vcvtph2ps / vcvtps2ph, eight at a time), which every variant from
// avx2 up requires; the baseline keeps the portable conversions of core/spec/dtype.h. Both round
// to nearest even and give the same bits for every non-NaN value (test_cpu_kernels checks all
// 65536 halves and the float edge cases); a NaN stays a NaN, with F16C's payload instead of the
// portable 0x7e00. Measured on an Intel Xeon (model 207): the scalar conversions made the fp16
// forward a quarter slower than bf16's at D128 L1024 (docs/PERFORMANCE.md).
bool useF16c() {
#if defined(__x86_64__)
  try {
    return activeCpuIsa() >= CpuIsa::avx2;
  } catch (const std::invalid_argument&) {  // ATTNSCOPE_CPU_ISA names a variant this CPU lacks
    return false;
  }
#else
  return false;
#endif
}

#if defined(__x86_64__)
__attribute__((target("avx,f16c"))) void halfToFloatF16c(const uint16_t* src, int64_t n, float* out, float scale,
                                                        bool add) {
  const __m256 s = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_mul_ps(s, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
    if (add) v = _mm256_add_ps(_mm256_loadu_ps(out + i), v);
    _mm256_storeu_ps(out + i, v);
  }
  for (; i < n; ++i) {
    const float v = scale * _cvtsh_ss(src[i]);
    out[i] = add ? out[i] + v : v;
  }
}

__attribute__((target("avx,f16c"))) void floatToHalfF16c(const float* in, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = _cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
#endif

}  // namespace

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
#if defined(__x86_64__)
      if (useF16c()) return halfToFloatF16c(src, n, out, scale, false);
#endif
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
#if defined(__x86_64__)
      if (useF16c()) return halfToFloatF16c(src, n, x, scale, true);
#endif
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
#if defined(__x86_64__)
      if (useF16c()) return floatToHalfF16c(in, n, dst);
#endif
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
