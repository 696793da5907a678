// Packing with AVX2 + F16C, shared by the avx2 and avx512 variants: 8 elements are converted
// to fp32 at once (vcvtph2ps for fp16, a shift for bf16), and K is transposed into its strips 8 x 8
// elements at a time. Included like tile_kernels_impl.h (after it), inside the variant's
// anonymous namespace and target pragma.

// No include guard on purpose: each variant's translation unit includes it exactly once.

inline __m256 load8(attnscope::DType dtype, const void* src, int64_t idx) {
  switch (dtype) {
    case attnscope::DType::fp32: return _mm256_loadu_ps(static_cast<const float*>(src) + idx);
    case attnscope::DType::fp16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(src) + idx)));
    case attnscope::DType::bf16: {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(src) + idx));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  }
  return _mm256_setzero_ps();
}

inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}

template <class V>
void packAvx(attnscope::DType dtype, const void* src, int64_t ld, bool transposed, int64_t k, int64_t n, float* out) {
  constexpr int NR = kNr<V>;
  const int64_t strips = (n + NR - 1) / NR;
  if (!transposed) {  // rows of op(B) are rows of the source: convert them 8 at a time
    for (int64_t p = 0; p < k; ++p)
      for (int64_t s = 0; s < strips; ++s) {
        float* dst = out + s * k * NR + p * NR;
        const int64_t j0 = s * NR, nc = smaller(NR, n - j0);
        int64_t j = 0;
        for (; j + 8 <= nc; j += 8) _mm256_storeu_ps(dst + j, load8(dtype, src, p * ld + j0 + j));
        for (; j < nc; ++j) dst[j] = elementAt<V>(dtype, src, p * ld + j0 + j);
        for (; j < NR; ++j) dst[j] = 0.0f;
      }
    return;
  }
  // op(B) = source^T: blocks of 8 source rows x 8 elements become 8 x 8 blocks of a strip.
  const int64_t full_rows = n / 8 * 8, full_p = k / 8 * 8;
  for (int64_t j0 = 0; j0 < full_rows; j0 += 8) {
    float* col = out + (j0 / NR) * k * NR + j0 % NR;
    for (int64_t p0 = 0; p0 < full_p; p0 += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) r[t] = load8(dtype, src, (j0 + t) * ld + p0);
      transpose8(r);
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) _mm256_storeu_ps(col + (p0 + t) * NR, r[t]);
    }
  }
  packScalar<V>(dtype, src, ld, true, k, 0, full_rows, full_p, k, n, out);           // k tail
  packScalar<V>(dtype, src, ld, true, k, full_rows, strips * NR, 0, k, n, out);      // row tail and padding
}
