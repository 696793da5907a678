// The avx512 variant: AVX-512 F/BW/VL/DQ. 12 x 32 micro-kernel: 24 accumulators, two B
// registers and one broadcast in the 32 zmm registers. Packing reuses the AVX2 code (AVX-512
// CPUs have AVX2 and F16C).

#include "kernels/cpu/tile_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

// Everything below is built for this variant's instruction set; the headers above are not.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#endif

namespace attnscope::cpu {
namespace {

struct Vec {
  using Reg = __m512;
  static constexpr int kWidth = 16;
  static constexpr int kMr = 12;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static Reg set1(float x) { return _mm512_set1_ps(x); }
  static Reg fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static float halfToFloat(uint16_t h) { return _cvtsh_ss(h); }
};

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_avx.h"
#include "kernels/cpu/softmax_avx512.h"

}  // namespace

const TileKernels kTileKernelsAvx512 = {CpuIsa::avx512, "avx512f", kNr<Vec>, Vec::kMr, packAvx<Vec>, gemmStrips<Vec>, gemmStrips<Vec, true>,
                                 rowMaxAvx512, exp2ShiftedAvx512, scaleRowAvx512, nullptr, nullptr, nullptr, nullptr};

}  // namespace attnscope::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__
