#pragma once
// The hot loops of the CPU backends, one set per instruction-set variant (cpu_isa.h), picked at
// run time: the matrix products (our own register-blocked micro-kernels; docs/PERFORMANCE.md
// says why these and not a BLAS) and the softmax rows.
//
// A product is two steps. pack_b copies op(B) (k x n, from fp32, fp16 or bf16 storage) into
// strips of nr columns, converted to fp32 and zero-padded to a whole strip; gemm then computes
// C = alpha * A * op(B) + beta * C with A an fp32 row-major m x k matrix. An fp32 B whose rows
// are whole strips is used in place (gemmRows). The caller owns the
// packed buffer (packedFloats floats), so it is counted in the backends' memory plans.

#include <cstdint>
#include <string>

#include "core/spec/dtype.h"
#include "kernels/cpu/cpu_isa.h"

namespace attnscope::cpu {

struct TileKernels {
  CpuIsa isa;
  const char* name;  // e.g. "avx2+fma" (what the environment record and bench_cpu print)
  int nr;            // columns of a packed strip
  int mr;            // rows of one micro-kernel call

  // transposed: B is stored n rows of k elements (K of attention: op(B) = K^T); otherwise k rows
  // of n (V). ld is the stored row stride in elements; src points at element (0, 0).
  void (*pack_b)(DType dtype, const void* src, int64_t ld, bool transposed, int64_t k, int64_t n, float* out);

  // C = alpha * A * B + beta * C with B in strips of nr columns: strip s starts at
  // b + s * strip_stride and its rows are ldb floats apart (packB's layout: ldb = nr,
  // strip_stride = k * nr; see packed()). beta 0 never reads C, so it may hold anything.
  void (*gemm)(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
               int64_t strip_stride, float beta, float* c, int64_t ldc);
  // The same with A given transposed: a holds A^T, k rows of m floats lda apart (element (i, p)
  // of A at a[p * lda + i]), as P and dS are when the backward needs P^T dO and dS^T Q: no
  // transposed copy, the micro-kernel reads the rows' values of each step side by side.
  void (*gemm_at)(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                  int64_t ldb, int64_t strip_stride, float beta, float* c, int64_t ldc);

  // The softmax rows, as specified in softmax_math.h (which forwards to the active variant).
  float (*row_max)(const float* x, int64_t n);
  float (*exp2_shifted)(const float* in, float* out, int64_t n, float shift, float k);
  void (*scale_row)(float* x, int64_t n, float a);

  // bf16 products with fp32 accumulation (AVX512_BF16 vdpbf16ps, or AMX tiles under amx_bf16);
  // nullptr in the variants without them. Layouts in tile_kernels_bf16.h: A bf16 row-major with
  // rows zero-padded to an even length; B packed in pairs by pack_pairs (pair_elements(k, n) bf16
  // values).
  int64_t (*pair_elements)(int64_t k, int64_t n);
  void (*pack_pairs)(const uint16_t* src, int64_t ld, bool transposed, int64_t k, int64_t n, uint16_t* out);
  void (*gemm_pairs)(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                     const uint16_t* packed, float beta, float* c, int64_t ldc);
  void (*round_bf16)(const float* in, int64_t n, uint16_t* out);

  int64_t packedFloats(int64_t k, int64_t n) const { return k * ((n + nr - 1) / nr * nr); }

  // gemm on what pack_b wrote.
  void gemmPacked(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* packed,
                  float beta, float* c, int64_t ldc) const {
    gemm(m, n, k, alpha, a, lda, packed, nr, k * nr, beta, c, ldc);
  }

  // gemm_at on what pack_b wrote: C = alpha * A * B + beta * C with A^T in a (k x m, stride lda).
  void gemmPackedAt(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* packed,
                    float beta, float* c, int64_t ldc) const {
    gemm_at(m, n, k, alpha, a, lda, packed, nr, k * nr, beta, c, ldc);
  }

  // A row-major fp32 B (k x n, row stride ldb) already is in strips when n is a whole number of
  // them: strip s is columns [s * nr, (s + 1) * nr), no packing needed.
  bool needsPacking(int64_t n) const { return n % nr != 0; }
  void gemmRows(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                float beta, float* c, int64_t ldc) const {
    gemm(m, n, k, alpha, a, lda, b, ldb, nr, beta, c, ldc);
  }
};

// The kernels of one variant (the caller checks cpuSupports first).
const TileKernels& tileKernels(CpuIsa isa);

// The kernels of activeCpuIsa(), or the set given to setTileKernelsForTesting.
const TileKernels& activeTileKernels();

// Tests only: makes activeTileKernels() return `kernels` (nullptr: back to normal). Lets a test
// run the backends on a model of a variant this CPU lacks (a scalar vdpbf16ps, for one).
void setTileKernelsForTesting(const TileKernels* kernels);

// "cpu kernels: avx2+fma (own; CPU has ...)" for the environment record; on a CPU with AMX that
// does not use it, amxProblem() too.
std::string cpuKernelDescription();

// Where `candidate`'s gemm_pairs disagrees with `reference`'s on a fixed set of small awkward
// products (both on B packed by reference.pack_pairs, so the two must share a layout: same nr),
// e.g. "differs by 0.25 at (5, 40) of m 37, n 45, k 70 (alpha 1, beta 0): ..."; empty when they
// agree. amx_bf16's self-check; tests run it on implementations they make wrong on purpose.
std::string gemmPairsDisagreement(const TileKernels& candidate, const TileKernels& reference);

// AMX in this process (tile_kernels_amx.cpp), decided once on first call (thread-safe) by asking
// Linux for the tile data (arch_prctl) and then running the self-check above, AMX against
// avx512_bf16. Call only where CPUID has AMX-TILE, AMX-BF16 and avx512_bf16 (cpu_isa.cpp does).
struct AmxUse {
  bool usable = false;
  std::string problem;  // why not, for amxProblem()
};
const AmxUse& amxUse();

// amx_bf16's gemm_pairs: avx512_bf16's layouts (strips of 32 columns) on AMX tiles. Only where
// cpuSupports(CpuIsa::amx_bf16); tileKernels(amx_bf16) is avx512_bf16's table with this product.
void gemmPairsAmx(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                  const uint16_t* packed, float beta, float* c, int64_t ldc);

// The variant tables, one per translation unit (each built for its instruction set).
extern const TileKernels kTileKernelsBaseline;
extern const TileKernels kTileKernelsAvx2;
extern const TileKernels kTileKernelsAvx512;
extern const TileKernels kTileKernelsAvx512Bf16;  // avx512 plus bf16 products

}  // namespace attnscope::cpu
