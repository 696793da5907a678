// bf16 products with fp32 accumulation, as AVX512_BF16's vdpbf16ps computes them: each fp32
// lane adds the products of one pair of bf16 values, a[2q] * b[2q] + a[2q+1] * b[2q+1]. Written
// over a traits type P (V's float operations plus loadPairs, broadcastPair, dot) and included
// like tile_kernels_impl.h (after it). The tests instantiate it with a scalar model of the
// instruction too, so its packing and loops are checked on CPUs without it.
//
// Layouts: A is bf16 row-major with its rows padded to an even length with zeros. B is packed
// in strips of kNr columns; strip s holds, for each pair q of k, kNr pairs (B[2q][j],
// B[2q+1][j]), zero past n and past k.

// No include guard on purpose: each user includes it exactly once.

inline int64_t pairsOf(int64_t k) { return (k + 1) / 2; }

template <class P>
int64_t packedPairElements(int64_t k, int64_t n) {
  constexpr int NR = kNr<P>;
  return pairsOf(k) * 2 * ((n + NR - 1) / NR * NR);
}

// transposed: B is stored n rows of k (K); else k rows of n (V). src, ld in bf16 elements.
// Where SSE2 is there (every x86-64), whole blocks go through vector registers: for B, two rows
// 2q, 2q + 1 are interleaved 8 columns at a time (punpcklwd / punpckhwd); for B^T, a pair is one
// 32-bit word of a source row, so 4 rows x 4 pairs are a 4 x 4 transpose of 32-bit words. The
// edges (a last partial strip, an odd k's last pair, the zero padding) are written one by one.
// The layer's weight gradients pack a chunk of rows this way per block of the result, so the
// element-by-element loop cost as much as the products there (Zen 4: the bf16 dw product at 308
// GFLOP/s against 386 for the forward product of the same size).
template <class P>
void packPairs(const uint16_t* src, int64_t ld, bool transposed, int64_t k, int64_t n, uint16_t* out) {
  constexpr int NR = kNr<P>;
  const int64_t pairs = pairsOf(k), strips = (n + NR - 1) / NR, whole_pairs = k / 2;
  auto element = [&](int64_t j, int64_t p) -> uint16_t {
    return j < n && p < k ? src[transposed ? j * ld + p : p * ld + j] : uint16_t{0};
  };
  for (int64_t s = 0; s < strips; ++s) {
    const int64_t j0 = s * NR;
    // Columns of this strip that are whole vector blocks (8 for B, 4 for B^T), from its start.
    int64_t vec_cols = 0;
#if defined(__SSE2__)
    const int64_t in_strip = smaller(NR, n - j0);
    if (!transposed) {
      vec_cols = in_strip / 8 * 8;
      for (int64_t q = 0; q < whole_pairs; ++q) {
        uint16_t* dst = out + (s * pairs + q) * NR * 2;
        const uint16_t* r0 = src + 2 * q * ld + j0;
        const uint16_t* r1 = r0 + ld;
        for (int64_t jj = 0; jj < vec_cols; jj += 8) {
          const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + jj));
          const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + jj));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * jj), _mm_unpacklo_epi16(a, b));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * jj + 8), _mm_unpackhi_epi16(a, b));
        }
      }
    } else {
      vec_cols = in_strip / 4 * 4;
      const int64_t vec_pairs = whole_pairs / 4 * 4;
      for (int64_t q0 = 0; q0 < vec_pairs; q0 += 4)
        for (int64_t jj = 0; jj < vec_cols; jj += 4) {
          __m128i r[4];
          for (int t = 0; t < 4; ++t)
            r[t] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (j0 + jj + t) * ld + 2 * q0));
          const __m128i t0 = _mm_unpacklo_epi32(r[0], r[1]), t1 = _mm_unpackhi_epi32(r[0], r[1]);
          const __m128i t2 = _mm_unpacklo_epi32(r[2], r[3]), t3 = _mm_unpackhi_epi32(r[2], r[3]);
          const __m128i c[4] = {_mm_unpacklo_epi64(t0, t2), _mm_unpackhi_epi64(t0, t2), _mm_unpacklo_epi64(t1, t3),
                                _mm_unpackhi_epi64(t1, t3)};
          for (int u = 0; u < 4; ++u)
            _mm_storeu_si128(reinterpret_cast<__m128i*>(out + (s * pairs + q0 + u) * NR * 2 + 2 * jj), c[u]);
        }
      // The whole pairs past the last block of 4, over the vector columns.
      for (int64_t q = vec_pairs; q < whole_pairs; ++q)
        for (int64_t jj = 0; jj < vec_cols; ++jj)
          for (int t = 0; t < 2; ++t) out[(s * pairs + q) * NR * 2 + 2 * jj + t] = element(j0 + jj, 2 * q + t);
    }
#endif
    for (int64_t q = 0; q < pairs; ++q) {
      uint16_t* dst = out + (s * pairs + q) * NR * 2;
      // Pairs the vector blocks wrote: every whole pair's first vec_cols columns.
      for (int64_t jj = q < whole_pairs ? vec_cols : 0; jj < NR; ++jj)
        for (int t = 0; t < 2; ++t) dst[2 * jj + t] = element(j0 + jj, 2 * q + t);
    }
  }
}

template <class P, int MR>
inline void microKernelPairs(int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b, float* c,
                             int64_t ldc, int64_t ncols, float alpha, float beta) {
  constexpr int NR = kNr<P>;
  typename P::Reg acc[MR][2];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = P::zero();
  for (int64_t q = 0; q < pairs; ++q) {
    const typename P::Reg b0 = P::loadPairs(b + q * NR * 2), b1 = P::loadPairs(b + q * NR * 2 + NR);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const typename P::Reg ai = P::broadcastPair(a + i * lda + 2 * q);
      acc[i][0] = P::dot(acc[i][0], ai, b0);
      acc[i][1] = P::dot(acc[i][1], ai, b1);
    }
  }
  storeTile<P, MR>(acc, c, ldc, ncols, alpha, beta);
}

template <class P, int R>
inline void tailKernelPairs(int rows, int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b, float* c,
                            int64_t ldc, int64_t ncols, float alpha, float beta) {
  if constexpr (R > 0) {
    if (rows == R)
      microKernelPairs<P, R>(pairs, a, lda, b, c, ldc, ncols, alpha, beta);
    else
      tailKernelPairs<P, R - 1>(rows, pairs, a, lda, b, c, ldc, ncols, alpha, beta);
  }
}

// C = alpha * A * B + beta * C, A m x k bf16 (lda even-padded), B from packPairs.
template <class P>
void gemmPairs(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda, const uint16_t* packed,
               float beta, float* c, int64_t ldc) {
  constexpr int MR = P::kMr, NR = kNr<P>;
  if (m <= 0 || n <= 0) return;
  const int64_t pairs = pairsOf(k), strips = (n + NR - 1) / NR;
  for (int64_t s = 0; s < strips; ++s) {
    const uint16_t* bs = packed + s * pairs * NR * 2;
    const int64_t nc = smaller(NR, n - s * NR);
    float* cs = c + s * NR;
    int64_t i = 0;
    for (; i + MR <= m; i += MR) microKernelPairs<P, MR>(pairs, a + i * lda, lda, bs, cs + i * ldc, ldc, nc, alpha, beta);
    if (i < m)
      tailKernelPairs<P, MR - 1>(static_cast<int>(m - i), pairs, a + i * lda, lda, bs, cs + i * ldc, ldc, nc, alpha,
                                 beta);
  }
}

// out[i] = in[i] rounded to bf16 (nearest even), for i in [0, n).
inline void roundToBf16(const float* in, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    __builtin_memcpy(&u, in + i, sizeof u);
    out[i] = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((u >> 16) | 0x40u)
                                              : static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
}
