// The softmax rows on 16 lanes, for the avx512 variants. Included only by their translation
// units, after tile_kernels_impl.h, inside their `#pragma GCC target` and anonymous namespace.
// Each lane runs exactly the operations of softmax_avx2.h's exp2Avx in the same order, so
// every element equals the 8-lane result bit for bit; only the sum's order of addition differs.
// The row tail goes through masked loads and stores (-inf pads give exactly 0).

// No include guard on purpose: each variant's translation unit includes it exactly once.

// GCC 12's AVX-512 headers build the unmasked intrinsics (_mm512_max_ps, _mm512_slli_epi32, the
// reductions) on a self-initialised "undefined" register, which -Wall reports as uninitialised
// once inlined here (GCC bug 105593, fixed in GCC 13); the values are never read.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// The same lane as exp2Avx in fewer instructions: vrndscaleps rounds to the nearest integer,
// ties to even, as exp2Avx's 1.5 * 2^23 trick does, so n and r are the same values; x is
// clamped to [-126, 127], so 2^n is a normal float, and vscalefps's p * 2^n is the product p
// times 2^n rounded once, as exp2Avx's multiply is. Its four integer steps and the multiply
// become one instruction.
inline __m512 exp2Avx512(__m512 x) {
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_LT_OQ);
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-126.0f)), _mm512_set1_ps(127.0f));
  const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(x, n);
  __m512 p = _mm512_set1_ps(kExp2C6);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExp2C5));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExp2C4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExp2C3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExp2C2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExp2C1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_scalef_ps(static_cast<__mmask16>(~underflow), p, n);
}

inline __mmask16 tailMask(int64_t rest) { return static_cast<__mmask16>((1u << rest) - 1u); }

float rowMaxAvx512(const float* x, int64_t n) {
  const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
  __m512 m0 = ninf, m1 = ninf;
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
    m1 = _mm512_max_ps(m1, _mm512_loadu_ps(x + j + 16));
  }
  for (; j + 16 <= n; j += 16) m0 = _mm512_max_ps(m0, _mm512_loadu_ps(x + j));
  if (j < n) m1 = _mm512_max_ps(m1, _mm512_mask_loadu_ps(ninf, tailMask(n - j), x + j));
  return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

float exp2ShiftedAvx512(const float* in, float* out, int64_t n, float shift, float k) {
  const __m512 vs = _mm512_set1_ps(shift), vk = _mm512_set1_ps(k);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0;
  int64_t j = 0;
  // Two rows of 16 per step: two independent chains of the polynomial.
  for (; j + 32 <= n; j += 32) {
    const __m512 e0 = exp2Avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(in + j), vs), vk));
    const __m512 e1 = exp2Avx512(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(in + j + 16), vs), vk));
    _mm512_storeu_ps(out + j, e0);
    _mm512_storeu_ps(out + j + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  for (; j < n; j += 16) {
    const __mmask16 live = n - j >= 16 ? static_cast<__mmask16>(0xffff) : tailMask(n - j);
    const __m512 x = _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), live, in + j);
    const __m512 e = exp2Avx512(_mm512_mul_ps(_mm512_sub_ps(x, vs), vk));
    _mm512_mask_storeu_ps(out + j, live, e);
    s0 = _mm512_add_ps(s0, e);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

void scaleRowAvx512(float* x, int64_t n, float a) {
  const __m512 va = _mm512_set1_ps(a);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), va));
  if (j < n) {
    const __mmask16 live = tailMask(n - j);
    _mm512_mask_storeu_ps(x + j, live, _mm512_mul_ps(_mm512_maskz_loadu_ps(live, x + j), va));
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
