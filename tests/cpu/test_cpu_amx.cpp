// amx_bf16: the AMX product's loops (tile_kernels_amx.h) on a scalar model of the tiles, on any
// CPU; the self-check that guards the variant, fed implementations that are wrong on purpose;
// what a CPU without AMX reports; and, where cpuSupports(amx_bf16), the real tiles. The tile
// instructions themselves run only on a CPU with AMX (skipped elsewhere, with a message).

#include <gtest/gtest.h>

#if defined(__SSE2__)
#include <emmintrin.h>  // tile_kernels_bf16.h packs with SSE2 where it is there
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "core/spec/dtype.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/tile_kernels.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope::cpu {
namespace {

// Only kNr matters to packPairs: strips of 32 columns, as in the avx512 variants.
struct Strip32 {
  static constexpr int kWidth = 16;
};

// The tiles as the SDM describes them (palette 1, every tile 16 rows of 64 bytes, as configured):
// bytes in, bytes out, and tdpbf16ps adding each pair's two products to the fp32 sum in turn.
struct TileModel {
  static inline thread_local uint8_t tile[8][16][64];
  static void configure() {}
  static void release() {}
  template <int t>
  static void zero() {
    std::memset(tile[t], 0, sizeof tile[t]);
  }
  template <int t>
  static void load(const void* p, int64_t stride) {
    for (int r = 0; r < 16; ++r) std::memcpy(tile[t][r], static_cast<const uint8_t*>(p) + r * stride, 64);
  }
  template <int t>
  static void store(void* p, int64_t stride) {
    for (int r = 0; r < 16; ++r) std::memcpy(static_cast<uint8_t*>(p) + r * stride, tile[t][r], 64);
  }
  static float bf16At(int t, int row, int index) {
    uint16_t h;
    std::memcpy(&h, &tile[t][row][2 * index], 2);
    return bf16ToFloat(h);
  }
  template <int c, int a, int b>
  static void dot() {
    for (int m = 0; m < 16; ++m)
      for (int k = 0; k < 16; ++k)
        for (int n = 0; n < 16; ++n) {
          float acc;
          std::memcpy(&acc, &tile[c][m][4 * n], 4);
          acc += bf16At(a, m, 2 * k) * bf16At(b, k, 2 * n);
          acc += bf16At(a, m, 2 * k + 1) * bf16At(b, k, 2 * n + 1);
          std::memcpy(&tile[c][m][4 * n], &acc, 4);
        }
  }
};

// Two plausible slips in the tile code, for the self-check to catch.
struct TileModelBTileAt16 : TileModel {  // tile 7 from b + 16: the right bytes' first half
  template <int t>
  static void load(const void* p, int64_t stride) {
    TileModel::load<t>(t == 7 ? static_cast<const uint16_t*>(p) - 16 : p, stride);
  }
};
struct TileModelStrideInElements : TileModel {  // A's stride in bf16 elements, not bytes
  template <int t>
  static void load(const void* p, int64_t stride) {
    TileModel::load<t>(p, t < 6 ? stride / 2 : stride);
  }
};

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_bf16.h"
#include "kernels/cpu/tile_kernels_amx.h"

// A plain gemm_pairs over the same packed layout: each C element's pairs summed in order, in fp32.
void plainGemmPairs(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                    const uint16_t* packed, float beta, float* c, int64_t ldc) {
  const int64_t pairs = pairsOf(k);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const uint16_t* col = packed + (j / 32) * pairs * 64 + (j % 32) * 2;
      float acc = 0.0f;
      for (int64_t q = 0; q < pairs; ++q) {
        acc += bf16ToFloat(a[i * lda + 2 * q]) * bf16ToFloat(col[q * 64]);
        acc += bf16ToFloat(a[i * lda + 2 * q + 1]) * bf16ToFloat(col[q * 64 + 1]);
      }
      c[i * ldc + j] = alpha * acc + (beta != 0.0f ? beta * c[i * ldc + j] : 0.0f);
    }
}

TileKernels pairKernels(const char* name, decltype(TileKernels::gemm_pairs) gemm) {
  TileKernels k{};
  k.isa = CpuIsa::amx_bf16;
  k.name = name;
  k.nr = 32;
  k.mr = 32;
  k.pair_elements = packedPairElements<Strip32>;
  k.pack_pairs = packPairs<Strip32>;
  k.gemm_pairs = gemm;
  return k;
}

const TileKernels kPlain = pairKernels("plain pairs", plainGemmPairs);
const TileKernels kModel = pairKernels("AMX loops on the tile model", gemmPairsTiles<TileModel>);

// The same products checked exactly against double loops: every value has at most 7
// significant bits, so every sum is exact in fp32 whatever its order.
void checkProducts(const TileKernels& g) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> dist(-64, 64);
  for (bool transposed : {true, false})
    for (int64_t m : {1, 5, 16, 17, 32, 37, 70})
      for (int64_t n : {1, 16, 17, 33, 64, 70})
        for (int64_t k : {0, 1, 2, 31, 32, 33, 64, 130}) {
          const int64_t k2 = (k + 1) / 2 * 2, lda = k2 + 2, ld = (transposed ? k : n) + 1, ldc = n + 1;
          std::vector<uint16_t> a(static_cast<size_t>(m * lda), 0x7fc0);  // NaN past the pairs
          std::vector<uint16_t> b(static_cast<size_t>((transposed ? n : k) * ld));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t p = 0; p < k2; ++p) a[i * lda + p] = p < k ? floatToBf16(dist(rng) / 16.0f) : uint16_t{0};
          for (uint16_t& x : b) x = floatToBf16(dist(rng) / 32.0f);
          std::vector<uint16_t> packed(static_cast<size_t>(g.pair_elements(k, n)), 0xffff);
          g.pack_pairs(b.data(), ld, transposed, k, n, packed.data());
          for (float beta : {0.0f, 0.5f}) {
            std::vector<float> c(static_cast<size_t>(m * ldc), beta == 0.0f ? std::nanf("") : 0.5f);
            g.gemm_pairs(m, n, k, 2.0f, a.data(), lda, packed.data(), beta, c.data(), ldc);
            for (int64_t i = 0; i < m; ++i) {
              for (int64_t j = 0; j < n; ++j) {
                double want = beta == 0.0f ? 0.0 : 0.25;
                for (int64_t p = 0; p < k; ++p)
                  want += 2.0 * bf16ToFloat(a[i * lda + p]) *
                          static_cast<double>(bf16ToFloat(b[transposed ? j * ld + p : p * ld + j]));
                ASSERT_EQ(c[i * ldc + j], want) << g.name << (transposed ? " B^T" : " B") << " m=" << m << " n=" << n
                                                << " k=" << k << " beta=" << beta << " at (" << i << ", " << j << ")";
              }
              if (beta != 0.0f) {
                ASSERT_EQ(c[i * ldc + n], 0.5f) << "column n written, row " << i;
              }
            }
          }
        }
}

TEST(AmxModel, ProductsMatchDoubleLoops) { checkProducts(kModel); }

TEST(AmxModel, SelfCheckAcceptsTheLoopsAndAPlainProduct) {
  EXPECT_EQ(gemmPairsDisagreement(kModel, kPlain), "");
  EXPECT_EQ(gemmPairsDisagreement(kPlain, kModel), "");
}

// Wrong on purpose: one element off by a part in a thousand; C read under beta 0; the column
// after n written; the tile code's plausible slips.
void offAt5_40(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda, const uint16_t* packed,
               float beta, float* c, int64_t ldc) {
  plainGemmPairs(m, n, k, alpha, a, lda, packed, beta, c, ldc);
  if (m > 5 && n > 40) c[5 * ldc + 40] += 1e-3f * (1.0f + std::abs(c[5 * ldc + 40]));
}
void readsCUnderBetaZero(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                         const uint16_t* packed, float beta, float* c, int64_t ldc) {
  std::vector<float> old(c, c + (m - 1) * ldc + n);
  plainGemmPairs(m, n, k, alpha, a, lda, packed, 0.0f, c, ldc);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] += beta * old[i * ldc + j];
}
void writesPastN(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda, const uint16_t* packed,
                 float beta, float* c, int64_t ldc) {
  plainGemmPairs(m, n, k, alpha, a, lda, packed, beta, c, ldc);
  if (ldc > n) c[2 * ldc + n] = 0.0f;
}

TEST(AmxModel, SelfCheckRefusesWrongProductsNamingTheElement) {
  const std::string off = gemmPairsDisagreement(pairKernels("off", offAt5_40), kPlain);
  EXPECT_NE(off.find("at (5, 40) of m 37, n 45, k 70 (alpha 1, beta 0)"), std::string::npos) << off;
  EXPECT_EQ(off.rfind("differs by ", 0), 0u) << off;
  EXPECT_NE(off.find("from off"), std::string::npos) << off;
  EXPECT_NE(off.find("from plain pairs"), std::string::npos) << off;

  const std::string reads = gemmPairsDisagreement(pairKernels("reads", readsCUnderBetaZero), kPlain);
  EXPECT_NE(reads.find("differs by nan at (0, 0) of m 37, n 45, k 70"), std::string::npos) << reads;

  const std::string past = gemmPairsDisagreement(pairKernels("past", writesPastN), kPlain);
  EXPECT_EQ(past, "writes C at (2, 45), outside m 37, n 45, k 70 (alpha 1, beta 0) (ldc 48): past") << past;

  for (const TileKernels& slip : {pairKernels("B tile at 16", gemmPairsTiles<TileModelBTileAt16>),
                                  pairKernels("A stride in elements", gemmPairsTiles<TileModelStrideInElements>)}) {
    const std::string d = gemmPairsDisagreement(slip, kPlain);
    EXPECT_EQ(d.rfind("differs by ", 0), 0u) << slip.name << ": " << d;
  }
  const std::string none = gemmPairsDisagreement(tileKernels(CpuIsa::baseline), kPlain);
  EXPECT_EQ(none.rfind("cannot compare", 0), 0u) << none;
}

// Where the CPU has AVX512_BF16: the real vdpbf16ps product agrees with the loops and the plain
// product, and the self-check refuses it made wrong.
void realOffAt5_40(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                   const uint16_t* packed, float beta, float* c, int64_t ldc) {
  tileKernels(CpuIsa::avx512_bf16).gemm_pairs(m, n, k, alpha, a, lda, packed, beta, c, ldc);
  if (m > 5 && n > 40) c[5 * ldc + 40] += 1e-3f * (1.0f + std::abs(c[5 * ldc + 40]));
}

TEST(AmxSelfCheck, AgainstTheRealAvx512Bf16Product) {
  if (!cpuSupports(CpuIsa::avx512_bf16))
    GTEST_SKIP() << "avx512_bf16 is compiled but not run: this CPU lacks AVX512_BF16 (CPU features: "
                 << cpuFeatureList() << ")";
  const TileKernels& real = tileKernels(CpuIsa::avx512_bf16);
  ASSERT_EQ(real.nr, kAmxNr) << "amx_bf16 reads avx512_bf16's strips as two B tiles";
  EXPECT_EQ(gemmPairsDisagreement(kModel, real), "");
  EXPECT_EQ(gemmPairsDisagreement(kPlain, real), "");
  const std::string off = gemmPairsDisagreement(pairKernels("avx512_bf16 made wrong", realOffAt5_40), real);
  EXPECT_NE(off.find("at (5, 40) of m 37, n 45, k 70 (alpha 1, beta 0)"), std::string::npos) << off;
}

// cpu.flash's bf16 attention and both backends' bf16 layers (forward and train) with the AMX
// loops on the tile model as their gemm_pairs (everything else avx512_bf16's): the products as
// the backends call them (strides, beta 1 accumulation, odd widths), against float64 and the plan.
struct UseKernels {
  explicit UseKernels(const TileKernels* k) { setTileKernelsForTesting(k); }
  ~UseKernels() { setTileKernelsForTesting(nullptr); }
};

WorkloadSpec layerOf(const cputest::Shape& shape, Pass pass) {
  WorkloadSpec s = cputest::specOf(shape);
  s.kind = WorkloadKind::layer;
  s.pass = pass;
  return s;
}

TEST(AmxModel, BackendsRunOnTheLoops) {
  if (!cpuSupports(CpuIsa::avx512_bf16))
    GTEST_SKIP() << "needs avx512_bf16 for the rest of the kernels: this CPU lacks "
                 << cpuIsaMissing(CpuIsa::avx512_bf16);
  TileKernels onModel = tileKernels(CpuIsa::avx512_bf16);
  onModel.name = "avx512_bf16 with the AMX loops on the tile model";
  onModel.gemm_pairs = gemmPairsTiles<TileModel>;
  UseKernels use(&onModel);
  constexpr DType b16 = DType::bf16;
  constexpr MaskLayout bcast = MaskLayout::broadcast;
  // {batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, mask, layout, seed}
  const std::vector<WorkloadSpec> specs = {
      cputest::specOf({2, 4, 2, 97, 0, 59, b16, "causal", bcast, 2}),
      cputest::specOf({1, 2, 0, 301, 0, 128, b16, "block:32", bcast, 4}),
      cputest::specOf({1, 2, 0, 97, 301, 64, b16, "none", bcast, 7}),
      cputest::specOf({1, 2, 0, 45, 0, 8, b16, "additive", bcast, 11}),
      layerOf({1, 2, 0, 64, 0, 12, b16, "block:16", bcast, 4}, Pass::forward),
      layerOf({1, 2, 0, 64, 0, 12, b16, "block:16", bcast, 4}, Pass::train),
      layerOf({1, 3, 1, 301, 0, 7, b16, "causal", bcast, 13}, Pass::train),
  };
  auto backends = cputest::cpuBackends(2);
  for (const WorkloadSpec& spec : specs)
    for (auto& b : backends) {
      if (spec.kind == WorkloadKind::attention && b->id() != "cpu.flash") continue;  // no pairs in cpu.reference's
      ASSERT_TRUE(b->support(spec).ok()) << b->id() << " " << summary(spec);
      RunOptions opt;
      opt.warmup = 0;
      opt.reps = 1;
      const RunResult r = runPoint(*b, spec, opt);
      ASSERT_EQ(r.status, RunStatus::ok) << b->id() << " " << summary(spec) << ": " << r.message;
      EXPECT_TRUE(r.accuracy.passed()) << b->id() << " " << summary(spec) << ": max abs error "
                                       << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
      EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << b->id() << " " << summary(spec);
    }
}

// The variant table: avx512_bf16's, but for its own gemm_pairs.
TEST(AmxVariant, IsAvx512Bf16WithItsOwnProduct) {
  const TileKernels& amx = tileKernels(CpuIsa::amx_bf16);
  const TileKernels& bf16 = tileKernels(CpuIsa::avx512_bf16);
  EXPECT_EQ(amx.isa, CpuIsa::amx_bf16);
  EXPECT_EQ(amx.nr, bf16.nr);
  EXPECT_EQ(amx.mr, bf16.mr);
  EXPECT_EQ(amx.pack_pairs, bf16.pack_pairs);
  EXPECT_EQ(amx.gemm, bf16.gemm);
#if defined(__x86_64__)
  EXPECT_EQ(amx.gemm_pairs, &gemmPairsAmx);
#endif
  EXPECT_NE(amx.gemm_pairs, bf16.gemm_pairs);
  EXPECT_EQ(parseCpuIsa("amx_bf16"), CpuIsa::amx_bf16);
  EXPECT_EQ(kAllCpuIsas[std::size(kAllCpuIsas) - 1], CpuIsa::amx_bf16);
}

bool cpuidHasAmx() { return cpuFeatureList().find("amx-bf16") != std::string::npos; }

// On a CPU without AMX nothing claims it and nothing is reported; with it, either the variant
// is in use or the reason it is not is in the environment record.
TEST(AmxVariant, ThisCpuSaysWhatItRuns) {
  const std::string d = cpuKernelDescription();
  if (!cpuidHasAmx()) {
    EXPECT_FALSE(cpuSupports(CpuIsa::amx_bf16));
    EXPECT_EQ(amxProblem(), "");
    EXPECT_EQ(d.find("amx"), std::string::npos) << d;
    const std::string missing = cpuIsaMissing(CpuIsa::amx_bf16);
    EXPECT_NE(missing.find("amx-tile amx-bf16"), std::string::npos) << missing;
    if (cpuSupports(CpuIsa::avx512_bf16)) {
      EXPECT_EQ(bestCpuIsa(), CpuIsa::avx512_bf16);
    }
    try {
      setCpuIsaOverride(CpuIsa::amx_bf16);
      ADD_FAILURE() << "amx_bf16 forced on a CPU without AMX";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("amx_bf16 is not supported by this CPU; it supports: baseline"),
                std::string::npos)
          << e.what();
    }
    return;
  }
  if (cpuSupports(CpuIsa::amx_bf16)) {
    EXPECT_EQ(amxProblem(), "");
    EXPECT_EQ(bestCpuIsa(), CpuIsa::amx_bf16);
    if (std::getenv("ATTNSCOPE_CPU_ISA") == nullptr) {
      EXPECT_NE(d.find(tileKernels(CpuIsa::amx_bf16).name), std::string::npos) << d;
    }
    EXPECT_EQ(cpuIsaMissing(CpuIsa::amx_bf16), "");
  } else {
    ASSERT_NE(amxProblem(), "") << "CPUID has AMX, yet amx_bf16 is off without a reason";
    EXPECT_EQ(cpuIsaMissing(CpuIsa::amx_bf16), amxProblem());
    EXPECT_NE(d.find(amxProblem()), std::string::npos) << d;
    EXPECT_EQ(d.find(tileKernels(CpuIsa::amx_bf16).name), std::string::npos) << d;
  }
}

TEST(AmxHardware, ProductsMatchDoubleLoops) {
  if (!cpuSupports(CpuIsa::amx_bf16))
    GTEST_SKIP() << "amx_bf16 is compiled but not run: this CPU lacks " << cpuIsaMissing(CpuIsa::amx_bf16)
                 << " (CPU features: " << cpuFeatureList() << ")";
  checkProducts(tileKernels(CpuIsa::amx_bf16));
  EXPECT_EQ(gemmPairsDisagreement(tileKernels(CpuIsa::amx_bf16), kModel), "");
}

// Run by ctest as test_cpu_amx_env, with ATTNSCOPE_CPU_ISA=amx_bf16 (read once per process).
TEST(AmxByName, RefusedWithTheUsualReasonWhereAbsent) {
  const char* env = std::getenv("ATTNSCOPE_CPU_ISA");
  if (env == nullptr || std::string(env) != "amx_bf16")
    GTEST_SKIP() << "needs ATTNSCOPE_CPU_ISA=amx_bf16 (ctest runs it so as test_cpu_amx_env)";
  if (cpuSupports(CpuIsa::amx_bf16)) {
    EXPECT_EQ(cpuIsaProblem(), "");
    EXPECT_EQ(activeCpuIsa(), CpuIsa::amx_bf16);
    return;
  }
  const std::string p = cpuIsaProblem();
  EXPECT_EQ(p.rfind("ATTNSCOPE_CPU_ISA=amx_bf16 is not supported by this CPU; it supports: baseline", 0), 0u) << p;
  if (!amxProblem().empty()) {
    EXPECT_NE(p.find(amxProblem()), std::string::npos) << p;
  }
  EXPECT_THROW(activeCpuIsa(), std::invalid_argument);
  EXPECT_EQ(cpuKernelDescription(), "cpu kernels: none (" + p + ")");
}

}  // namespace
}  // namespace attnscope::cpu
