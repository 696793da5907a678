// The avx512_bf16 variant: the avx512 kernels, plus bf16 products with vdpbf16ps (AVX512_BF16)
// for bf16 workloads. 12 x 32 micro-kernels: 24 accumulators, two B
// registers and one broadcast in the 32 zmm registers, for fp32 lanes or bf16 pairs.

#include "kernels/cpu/tile_kernels.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>

// Everything below is built for this variant's instruction set; the headers above are not.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")
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
  // 16 pairs of bf16; one pair broadcast to every lane; acc + the lanes' pair dot products.
  static Reg loadPairs(const uint16_t* p) { return _mm512_castsi512_ps(_mm512_loadu_si512(p)); }
  static Reg broadcastPair(const uint16_t* p) {
    uint32_t v;
    __builtin_memcpy(&v, p, sizeof v);
    return _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(v)));
  }
  static Reg dot(Reg acc, Reg a, Reg b) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b));
  }
};

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_avx.h"
#include "kernels/cpu/softmax_avx512.h"
#include "kernels/cpu/tile_kernels_bf16.h"

}  // namespace

const TileKernels kTileKernelsAvx512Bf16 = {CpuIsa::avx512_bf16, "avx512f+avx512_bf16", kNr<Vec>, Vec::kMr,
                                           packAvx<Vec>, gemmStrips<Vec>, gemmStrips<Vec, true>, rowMaxAvx512, exp2ShiftedAvx512, scaleRowAvx512,
                                           packedPairElements<Vec>, packPairs<Vec>, gemmPairs<Vec>, roundToBf16};

}  // namespace attnscope::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__
