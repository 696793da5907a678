// The micro-kernel and loop nest shared by every variant, written once over a vector-traits
// type V (register type, width, load/store/broadcast/fma). Included only by the
// tile_kernels_<variant>.cpp files, after their `#pragma GCC target` and inside their anonymous
// namespace: every function here then has internal linkage and is built for that file's
// instruction set, so the linker can never hand a baseline caller an AVX-512 copy.
//
// V provides: Reg, kWidth (floats per register), kMr (rows per micro-kernel call), zero(),
// load(p), store(p, r), set1(x), fma(a, b, c) = a * b + c, mul(a, b).
// Columns per packed strip: kNr = 2 * kWidth (two registers per row of C).

// No include guard on purpose: each variant's translation unit includes it exactly once.

// Taylor coefficients of 2^r on [-0.5, 0.5] (degree 6, relative error below 2e-7).
constexpr float kExp2C1 = 0.693147180559945f, kExp2C2 = 0.240226506959101f, kExp2C3 = 0.0555041086648216f,
                kExp2C4 = 0.00961812910762848f, kExp2C5 = 0.00133335581464284f, kExp2C6 = 0.000154035303933816f;

template <class V>
constexpr int kNr = 2 * V::kWidth;

// K is walked in blocks of this many rows, so a packed strip block (kKc x kNr floats) stays in
// L1 while the row blocks of A stream past it.
constexpr int64_t kKc = 256;

inline int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }

// C[0..MR) x [0..ncols) = alpha * acc + beta * C (beta 0: C is not read).
template <class V, int MR>
inline void storeTile(const typename V::Reg (&acc)[MR][2], float* c, int64_t ldc, int64_t ncols, float alpha,
                      float beta) {
  constexpr int W = V::kWidth, NR = kNr<V>;
  const typename V::Reg va = V::set1(alpha);
  if (ncols == NR) {
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      float* ci = c + i * ldc;
      typename V::Reg r0 = V::mul(acc[i][0], va), r1 = V::mul(acc[i][1], va);
      if (beta != 0.0f) {
        const typename V::Reg vb = V::set1(beta);
        r0 = V::fma(vb, V::load(ci), r0);
        r1 = V::fma(vb, V::load(ci + W), r1);
      }
      V::store(ci, r0);
      V::store(ci + W, r1);
    }
    return;
  }
  // The last strip of a product whose n is not a multiple of kNr: only ncols columns exist in C.
  alignas(64) float tmp[MR * NR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    V::store(tmp + i * NR, V::mul(acc[i][0], va));
    V::store(tmp + i * NR + W, V::mul(acc[i][1], va));
  }
  for (int i = 0; i < MR; ++i)
    for (int64_t j = 0; j < ncols; ++j) {
      float& cij = c[i * ldc + j];
      cij = tmp[i * NR + j] + (beta != 0.0f ? beta * cij : 0.0f);
    }
}

// C[0..MR) x [0..ncols) = alpha * A B + beta * C over kc steps. a: row-major with stride lda,
// element (i, p) at a[i * lda + p], or with AT (A given transposed, k rows of m) at
// a[p * lda + i]: the MR values of step p side by side, so no transposed copy is needed;
// b: one strip block, kc rows of kNr floats, ldb floats apart.
template <class V, int MR, bool AT>
inline void microKernel(int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                        int64_t ncols, float alpha, float beta) {
  constexpr int W = V::kWidth;
  typename V::Reg acc[MR][2];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = V::zero();
  for (int64_t p = 0; p < kc; ++p) {
    const typename V::Reg b0 = V::load(b + p * ldb), b1 = V::load(b + p * ldb + W);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const typename V::Reg ai = V::set1(AT ? a[p * lda + i] : a[i * lda + p]);
      acc[i][0] = V::fma(ai, b0, acc[i][0]);
      acc[i][1] = V::fma(ai, b1, acc[i][1]);
    }
  }
  storeTile<V, MR>(acc, c, ldc, ncols, alpha, beta);
}

// The rows left over after the whole MR blocks: one micro-kernel of exactly `rows` rows.
template <class V, int R, bool AT>
inline void tailKernel(int rows, int64_t kc, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                       int64_t ldc, int64_t ncols, float alpha, float beta) {
  if constexpr (R > 0) {
    if (rows == R)
      microKernel<V, R, AT>(kc, a, lda, b, ldb, c, ldc, ncols, alpha, beta);
    else
      tailKernel<V, R - 1, AT>(rows, kc, a, lda, b, ldb, c, ldc, ncols, alpha, beta);
  }
}

// The product (tile_kernels.h's gemm; with AT its gemm_at: a holds A^T, k rows of m).
template <class V, bool AT = false>
void gemmStrips(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                int64_t ldb, int64_t strip_stride, float beta, float* c, int64_t ldc) {
  constexpr int MR = V::kMr, NR = kNr<V>;
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta != 0.0f ? beta * c[i * ldc + j] : 0.0f;
    return;
  }
  const int64_t strips = (n + NR - 1) / NR;
  for (int64_t pc = 0; pc < k; pc += kKc) {
    const int64_t kc = smaller(kKc, k - pc);
    const float beta_here = pc == 0 ? beta : 1.0f;
    for (int64_t s = 0; s < strips; ++s) {
      const float* bs = b + s * strip_stride + pc * ldb;
      const int64_t nc = smaller(NR, n - s * NR);
      float* cs = c + s * NR;
      // Element (i, pc) of A.
      auto at = [&](int64_t i) { return AT ? a + pc * lda + i : a + i * lda + pc; };
      int64_t i = 0;
      for (; i + MR <= m; i += MR)
        microKernel<V, MR, AT>(kc, at(i), lda, bs, ldb, cs + i * ldc, ldc, nc, alpha, beta_here);
      if (i < m)
        tailKernel<V, MR - 1, AT>(static_cast<int>(m - i), kc, at(i), lda, bs, ldb, cs + i * ldc, ldc, nc, alpha,
                                  beta_here);
    }
  }
}

// Element idx of a tensor stored in dtype, as float (V provides halfToFloat).
template <class V>
inline float elementAt(attnscope::DType dtype, const void* src, int64_t idx) {
  switch (dtype) {
    case attnscope::DType::fp32: return static_cast<const float*>(src)[idx];
    case attnscope::DType::fp16: return V::halfToFloat(static_cast<const uint16_t*>(src)[idx]);
    case attnscope::DType::bf16: {
      const uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t*>(src)[idx]) << 16;
      float f;
      __builtin_memcpy(&f, &bits, sizeof f);
      return f;
    }
  }
  return 0.0f;
}

// Packs op(B) element by element; the variants with wide registers use it only for the edges.
template <class V>
void packScalar(attnscope::DType dtype, const void* src, int64_t ld, bool transposed, int64_t k, int64_t j0,
                int64_t j1, int64_t p0, int64_t p1, int64_t n, float* out) {
  constexpr int NR = kNr<V>;
  for (int64_t j = j0; j < j1; ++j) {
    float* col = out + (j / NR) * k * NR + j % NR;
    for (int64_t p = p0; p < p1; ++p)
      col[p * NR] = j < n ? elementAt<V>(dtype, src, transposed ? j * ld + p : p * ld + j) : 0.0f;
  }
}
