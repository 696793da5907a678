// The softmax rows on 8 lanes, for the avx2 variant. Included like tile_kernels_impl.h (after
// it), inside the variant's anonymous namespace and target pragma. The avx512 variants have their
// own on 16 lanes (softmax_avx512.h), with the same exp2 lane for lane.

// No include guard on purpose: the avx2 translation unit includes it exactly once.

inline __m256 exp2Avx(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
  const __m256 magic = _mm256_set1_ps(12582912.0f);  // 1.5 * 2^23
  const __m256 shifted = _mm256_add_ps(x, magic);
  const __m256 r = _mm256_sub_ps(x, _mm256_sub_ps(shifted, magic));
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_castps_si256(magic));
  __m256 p = _mm256_set1_ps(kExp2C6);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExp2C5));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExp2C4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExp2C3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExp2C2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExp2C1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(ni, _mm256_set1_epi32(127)), 23));
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, scale));
}

inline float horizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float horizontalMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float rowMaxAvx(const float* x, int64_t n) {
  const float ninf = -__builtin_inff();
  __m256 m0 = _mm256_set1_ps(ninf), m1 = m0;
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + j));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + j + 8));
  }
  float m = horizontalMax(_mm256_max_ps(m0, m1));
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

float exp2ShiftedAvx(const float* in, float* out, int64_t n, float shift, float k) {
  const __m256 vs = _mm256_set1_ps(shift), vk = _mm256_set1_ps(k);
  __m256 sum = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp2Avx(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(in + j), vs), vk));
    _mm256_storeu_ps(out + j, e);
    sum = _mm256_add_ps(sum, e);
  }
  if (j < n) {  // the tail through a padded block: -inf pads give exactly 0
    alignas(32) float block[8];
    const int64_t rest = n - j;
    for (int t = 0; t < 8; ++t) block[t] = t < rest ? in[j + t] : -__builtin_inff();
    const __m256 e = exp2Avx(_mm256_mul_ps(_mm256_sub_ps(_mm256_load_ps(block), vs), vk));
    _mm256_store_ps(block, e);
    for (int64_t t = 0; t < rest; ++t) out[j + t] = block[t];
    sum = _mm256_add_ps(sum, e);
  }
  return horizontalSum(sum);
}

void scaleRowAvx(float* x, int64_t n, float a) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), va));
  for (; j < n; ++j) x[j] *= a;
}
