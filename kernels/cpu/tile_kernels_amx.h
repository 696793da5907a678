// bf16 products with fp32 accumulation on AMX tiles, with avx512_bf16's layouts (tile_kernels_bf16.h:
// A bf16 rows padded to an even length, B packed in strips of 32 columns, per pair q of k the 32
// pairs (B[2q][j], B[2q+1][j])). Written over a tile traits type T and included after
// tile_kernels_impl.h and tile_kernels_bf16.h, like them: tile_kernels_amx.cpp instantiates it
// with the AMX instructions, the tests with a scalar model of the tiles, so the blocking, the
// edges and alpha / beta run on CPUs without AMX too.
//
// One block is 32 rows of C by one strip: C tiles 0 (rows 0-15, columns 0-15), 1 (rows 0-15,
// columns 16-31), 2 and 3 (rows 16-31); A tiles 4 (rows 0-15) and 5 (rows 16-31), 16 rows of
// 16 pairs (64 bytes); B tiles 6 (columns 0-15) and 7 (columns 16-31), 16 pair rows of 16
// columns x 2 bf16 (64 bytes), read from the strip 128 bytes apart, so the packed layout needs
// no repacking. RT, the row tiles of a block, is 1 when it has 16 rows or fewer (tiles 2, 3 and 5
// unused).
//
// T is one instruction per call, the tile numbers as template arguments (all the addresses and
// strides are worked out here, where the tests reach them): configure() (palette 1, every tile
// 16 rows x 64 bytes), release(), zero<t>(), load<t>(p, stride_bytes), store<t>(p, stride_bytes),
// dot<c, a, b>() (tile c += tile a times tile b in bf16 pairs, fp32 sums).

// No include guard on purpose: each user includes it exactly once.

constexpr int kAmxNr = 32;     // columns of a strip: two B tiles (kNr of the avx512 variants)
constexpr int kAmxRows = 32;   // rows of C per block: two tiles
constexpr int kAmxPairs = 16;  // pairs of k per step: 64 bytes of bf16 per A row

// C[0..rows) x [0..ncols) = alpha * A B + beta * C for one block (beta 0 never reads C). a: the
// block's first row; b: its strip; pairs: the pairs of k in both.
template <class T, int RT>
void amxBlock(int rows, int64_t pairs, const uint16_t* a, int64_t lda, const uint16_t* b, float* c, int64_t ldc,
              int64_t ncols, float alpha, float beta) {
  // A tile load reads 16 whole pairs of 16 (or 32) rows and a B tile load 16 whole pair rows:
  // where the block has fewer rows, or the last step fewer pairs, those reads would pass the
  // caller's A or the packed strip, so the step reads zero-padded copies instead.
  alignas(64) uint16_t a_edge[kAmxRows * 2 * kAmxPairs];
  alignas(64) uint16_t b_edge[kAmxPairs * 2 * kAmxNr];
  T::template zero<0>();
  T::template zero<1>();
  if constexpr (RT == 2) {
    T::template zero<2>();
    T::template zero<3>();
  }
  for (int64_t q0 = 0; q0 < pairs; q0 += kAmxPairs) {
    const int64_t pq = smaller(kAmxPairs, pairs - q0);
    const uint16_t* at = a + 2 * q0;
    int64_t a_ld = lda;
    if (rows < RT * 16 || pq < kAmxPairs) {
      for (int i = 0; i < RT * 16; ++i)
        for (int64_t e = 0; e < 2 * kAmxPairs; ++e)
          a_edge[i * 2 * kAmxPairs + e] = i < rows && e < 2 * pq ? at[i * lda + e] : uint16_t{0};
      at = a_edge;
      a_ld = 2 * kAmxPairs;
    }
    const uint16_t* bt = b + q0 * 2 * kAmxNr;
    if (pq < kAmxPairs) {
      for (int64_t e = 0; e < kAmxPairs * 2 * kAmxNr; ++e) b_edge[e] = e < pq * 2 * kAmxNr ? bt[e] : uint16_t{0};
      bt = b_edge;
    }
    T::template load<4>(at, a_ld * 2);
    if constexpr (RT == 2) T::template load<5>(at + 16 * a_ld, a_ld * 2);
    T::template load<6>(bt, 2 * kAmxNr * 2);
    T::template load<7>(bt + 2 * 16, 2 * kAmxNr * 2);
    T::template dot<0, 4, 6>();
    T::template dot<1, 4, 7>();
    if constexpr (RT == 2) {
      T::template dot<2, 5, 6>();
      T::template dot<3, 5, 7>();
    }
  }
  alignas(64) float out[kAmxRows * kAmxNr];
  T::template store<0>(out, kAmxNr * 4);
  T::template store<1>(out + 16, kAmxNr * 4);
  if constexpr (RT == 2) {
    T::template store<2>(out + 16 * kAmxNr, kAmxNr * 4);
    T::template store<3>(out + 16 * kAmxNr + 16, kAmxNr * 4);
  }
  for (int i = 0; i < rows; ++i) {
    float* ci = c + i * ldc;
    const float* oi = out + i * kAmxNr;
    if (beta != 0.0f) {
      for (int64_t j = 0; j < ncols; ++j) ci[j] = alpha * oi[j] + beta * ci[j];
    } else {
      for (int64_t j = 0; j < ncols; ++j) ci[j] = alpha * oi[j];
    }
  }
}

// C = alpha * A * B + beta * C, A m x k bf16 (lda even-padded), B from packPairs with kNr 32.
template <class T>
void gemmPairsTiles(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                    const uint16_t* packed, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  const int64_t pairs = pairsOf(k), strips = (n + kAmxNr - 1) / kAmxNr;
  T::configure();
  for (int64_t s = 0; s < strips; ++s) {
    const uint16_t* bs = packed + s * pairs * 2 * kAmxNr;
    const int64_t nc = smaller(kAmxNr, n - s * kAmxNr);
    for (int64_t i = 0; i < m; i += kAmxRows) {
      const int rows = static_cast<int>(smaller(kAmxRows, m - i));
      if (rows > 16)
        amxBlock<T, 2>(rows, pairs, a + i * lda, lda, bs, c + i * ldc + s * kAmxNr, ldc, nc, alpha, beta);
      else
        amxBlock<T, 1>(rows, pairs, a + i * lda, lda, bs, c + i * ldc + s * kAmxNr, ldc, nc, alpha, beta);
    }
  }
  T::release();
}
