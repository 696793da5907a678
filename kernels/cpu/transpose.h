#pragma once
// A matrix transposed in blocks, for the products whose left-hand side is a transpose and cannot
// be read in place: a linear layer's weight gradient a^T b on bf16 pairs, cpu.reference's dK and
// dV from dS^T and P^T (rows Lkv floats apart: read in place by gemm_at each step of the product
// touches a new page, and cpu.reference train fp32 D128 L1024 went 110-121 -> 121-134 ms). The
// fp32 weight gradients and cpu.flash's fp32 tiles (rows of 256 and 128 floats) use gemm_at.

#include <algorithm>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace attnscope::cpu {

// out[c * ldo + r] = in[r * ldi + c] for r < rows, c < cols; nothing else in out is written.
// In 32 x 32 blocks, so the block's reads and writes both stay in L1: on matrices of 256 x 256
// and more the plain two loops write a new cache line per element and took 1-3.7 ns per element
// where this takes 0.4 (Intel Xeon model 207, fp32 and bf16 alike; docs/PERFORMANCE.md). On a
// tile already in L1 the two are the same, so cpu.flash's bf16 backward tiles keep plain loops.
#if defined(__SSE2__)
// out[c * ldo + r] = in[r * ldi + c] for an 8 x 8 block of 16-bit elements: three rounds of
// unpacks (16-, 32- and 64-bit), 24 instructions for 64 elements.
inline void transpose8x8Bits(const uint16_t* in, int64_t ldi, uint16_t* out, int64_t ldo) {
  __m128i r[8], a[8], b[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * ldi));
  for (int i = 0; i < 4; ++i) {
    a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);  // rows 2i, 2i + 1: columns 0-3
    a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);  // columns 4-7
  }
  for (int h = 0; h < 2; ++h)  // rows 0-3, then rows 4-7
    for (int i = 0; i < 2; ++i) {
      b[4 * h + 2 * i] = _mm_unpacklo_epi32(a[4 * h + i], a[4 * h + 2 + i]);      // columns 4i, 4i + 1 of 4 rows
      b[4 * h + 2 * i + 1] = _mm_unpackhi_epi32(a[4 * h + i], a[4 * h + 2 + i]);  // columns 4i + 2, 4i + 3
    }
  for (int c = 0; c < 4; ++c) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * c) * ldo), _mm_unpacklo_epi64(b[c], b[4 + c]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (2 * c + 1) * ldo), _mm_unpackhi_epi64(b[c], b[4 + c]));
  }
}
#endif

template <class T>
void transposeBlocked(const T* in, int64_t rows, int64_t cols, int64_t ldi, T* out, int64_t ldo) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t r1 = std::min(rows, r0 + kBlock);
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t c1 = std::min(cols, c0 + kBlock);
#if defined(__SSE2__)
      // 16-bit elements (the bf16 weight gradients' chunks) in 8 x 8 register blocks: the loops
      // below moved them one at a time, a quarter of that product's time on Zen 4.
      if constexpr (sizeof(T) == 2) {
        const int64_t rv = r0 + (r1 - r0) / 8 * 8, cv = c0 + (c1 - c0) / 8 * 8;
        for (int64_t r = r0; r < rv; r += 8)
          for (int64_t c = c0; c < cv; c += 8)
            transpose8x8Bits(reinterpret_cast<const uint16_t*>(in + r * ldi + c), ldi,
                             reinterpret_cast<uint16_t*>(out + c * ldo + r), ldo);
        for (int64_t c = c0; c < c1; ++c)
          for (int64_t r = c < cv ? rv : r0; r < r1; ++r) out[c * ldo + r] = in[r * ldi + c];
        continue;
      }
#endif
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * ldo + r] = in[r * ldi + c];
    }
  }
}

}  // namespace attnscope::cpu
