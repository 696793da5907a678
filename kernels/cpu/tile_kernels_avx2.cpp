// The avx2 variant: AVX2 + FMA, F16C for fp16 conversion. 6 x 16 micro-kernel: 12 accumulators,
// two B registers and one broadcast in the 16 ymm registers.

#include "kernels/cpu/tile_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

// Everything below is built for this variant's instruction set; the headers above are not.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace attnscope::cpu {
namespace {

struct Vec {
  using Reg = __m256;
  static constexpr int kWidth = 8;
  static constexpr int kMr = 6;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static Reg set1(float x) { return _mm256_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static float halfToFloat(uint16_t h) { return _cvtsh_ss(h); }
};

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_avx.h"
#include "kernels/cpu/softmax_avx2.h"

}  // namespace

const TileKernels kTileKernelsAvx2 = {CpuIsa::avx2, "avx2+fma+f16c", kNr<Vec>, Vec::kMr, packAvx<Vec>, gemmStrips<Vec>, gemmStrips<Vec, true>,
                                 rowMaxAvx, exp2ShiftedAvx, scaleRowAvx, nullptr, nullptr, nullptr, nullptr};

}  // namespace attnscope::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__
