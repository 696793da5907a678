// The bf16 pair products (tile_kernels_bf16.h), which only the avx512_bf16 variant runs in
// hardware (vdpbf16ps; amx_bf16's AMX product is test_cpu_amx's). Checked twice: with a scalar
// model of the instruction, on any CPU, both the kernels and cpu.flash's bf16 path built on them
// (setTileKernelsForTesting), forward and backward; and with the real variant where this CPU has AVX512_BF16 (skipped
// with a message where it does not).

#include <gtest/gtest.h>

#if defined(__SSE2__)
#include <emmintrin.h>  // tile_kernels_bf16.h packs with SSE2 where it is there
#endif

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/spec/dtype.h"
#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/tile_kernels.h"
#include "tests/cpu/cpu_test_support.h"

namespace attnscope::cpu {
namespace {

// vdpbf16ps lane by lane: acc + a.hi * b.hi + a.lo * b.lo, products of bf16 values in fp32.
struct ModelVec {
  struct Reg {
    float x[16];
  };
  static constexpr int kWidth = 16;
  static constexpr int kMr = 5;
  static Reg zero() { return Reg{}; }
  static Reg load(const float* p) {
    Reg r;
    std::memcpy(r.x, p, sizeof r.x);
    return r;
  }
  static void store(float* p, Reg r) { std::memcpy(p, r.x, sizeof r.x); }
  static Reg set1(float v) {
    Reg r;
    for (float& x : r.x) x = v;
    return r;
  }
  static Reg fma(Reg a, Reg b, Reg c) {
    for (int l = 0; l < 16; ++l) c.x[l] += a.x[l] * b.x[l];
    return c;
  }
  static Reg mul(Reg a, Reg b) {
    for (int l = 0; l < 16; ++l) a.x[l] *= b.x[l];
    return a;
  }
  static float halfToFloat(uint16_t h) { return attnscope::halfToFloat(h); }
  static Reg loadPairs(const uint16_t* p) { return load(reinterpret_cast<const float*>(p)); }
  static Reg broadcastPair(const uint16_t* p) {
    float v;
    std::memcpy(&v, p, sizeof v);
    return set1(v);
  }
  static Reg dot(Reg acc, Reg a, Reg b) {
    for (int l = 0; l < 16; ++l) {
      uint16_t ah[2], bh[2];
      std::memcpy(ah, &a.x[l], 4);
      std::memcpy(bh, &b.x[l], 4);
      acc.x[l] += bf16ToFloat(ah[1]) * bf16ToFloat(bh[1]);
      acc.x[l] += bf16ToFloat(ah[0]) * bf16ToFloat(bh[0]);
    }
    return acc;
  }
};

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_bf16.h"

// The baseline variant's fp32 kernels plus the model's pair products.
TileKernels modelKernels() {
  TileKernels k = tileKernels(CpuIsa::baseline);
  k.name = "baseline + scalar model of vdpbf16ps";
  k.pair_elements = packedPairElements<ModelVec>;
  k.pack_pairs = packPairs<ModelVec>;
  k.gemm_pairs = gemmPairs<ModelVec>;
  k.round_bf16 = roundToBf16;
  return k;
}

const TileKernels kModel = modelKernels();

void checkPairProducts(const TileKernels& g) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> dist(-64, 64);
  for (bool transposed : {true, false})
    for (int64_t m : {1, 4, 13})
      for (int64_t n : {1, 16, 33, 64})
        for (int64_t k : {1, 2, 7, 64, 130}) {
          const int64_t k2 = (k + 1) / 2 * 2, ld = (transposed ? k : n) + 1;
          std::vector<uint16_t> a(static_cast<size_t>(m * k2), 0), b(static_cast<size_t>((transposed ? n : k) * ld));
          std::vector<float> af(a.size(), 0.0f), bf(b.size());
          for (int64_t i = 0; i < m; ++i)
            for (int64_t p = 0; p < k; ++p) {
              af[i * k2 + p] = static_cast<float>(dist(rng)) / 16.0f;
              a[i * k2 + p] = floatToBf16(af[i * k2 + p]);
            }
          for (size_t i = 0; i < b.size(); ++i) {
            bf[i] = static_cast<float>(dist(rng)) / 32.0f;
            b[i] = floatToBf16(bf[i]);
          }
          std::vector<uint16_t> packed(static_cast<size_t>(g.pair_elements(k, n)), 0xffff);
          g.pack_pairs(b.data(), ld, transposed, k, n, packed.data());
          for (float beta : {0.0f, 1.0f}) {
            std::vector<float> c(static_cast<size_t>(m * n), beta == 0.0f ? std::nanf("") : 0.5f);
            g.gemm_pairs(m, n, k, 2.0f, a.data(), k2, packed.data(), beta, c.data(), n);
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                double want = beta == 0.0f ? 0.0 : 0.5;
                for (int64_t p = 0; p < k; ++p)
                  want += 2.0 * af[i * k2 + p] * static_cast<double>(bf[transposed ? j * ld + p : p * ld + j]);
                ASSERT_NEAR(c[i * n + j], want, 1e-5 * (1.0 + std::abs(want)))
                    << g.name << (transposed ? " B^T" : " B") << " m=" << m << " n=" << n << " k=" << k;
              }
          }
        }
  std::vector<float> in = {1.0f, 1.00390625f, 1.01171875f, -3.14159f, 0.0f};
  std::vector<uint16_t> out(in.size());
  g.round_bf16(in.data(), static_cast<int64_t>(in.size()), out.data());
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], floatToBf16(in[i])) << in[i];
}

TEST(Bf16Pairs, ModelProductsMatchDoubleLoops) { checkPairProducts(kModel); }

TEST(Bf16Pairs, HardwareProductsMatchDoubleLoops) {
  if (!cpuSupports(CpuIsa::avx512_bf16))
    GTEST_SKIP() << "avx512_bf16 is compiled but not run: this CPU lacks AVX512_BF16 (CPU features: "
                 << cpuFeatureList() << ")";
  checkPairProducts(tileKernels(CpuIsa::avx512_bf16));
}

TEST(Bf16Pairs, OnlyTheBf16VariantsHaveThem) {
  for (CpuIsa isa : kAllCpuIsas)
    EXPECT_EQ(tileKernels(isa).gemm_pairs != nullptr, isa == CpuIsa::avx512_bf16 || isa == CpuIsa::amx_bf16)
        << toString(isa);
}

// cpu.flash's bf16 path (Q, K, V, P in bf16, scale applied in the softmax) on the model kernels:
// accuracy against float64 and the plan's tile sizes, over awkward sizes and every mask kind.
struct UseModel {
  UseModel() { setTileKernelsForTesting(&kModel); }
  ~UseModel() { setTileKernelsForTesting(nullptr); }
};

class FlashOnModel : public ::testing::TestWithParam<cputest::Shape> {};

TEST_P(FlashOnModel, MatchesFloat64ReferenceAndPlan) {
  UseModel model;
  auto backends = cputest::cpuBackends(2);
  Backend& flash = *backends[1];
  const WorkloadSpec spec = cputest::specOf(GetParam());
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  const RunResult r = runPoint(flash, spec, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_TRUE(r.accuracy.passed()) << summary(spec) << ": max abs error " << r.accuracy.max_abs_error << " > "
                                   << r.accuracy.tolerance;
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << summary(spec);
}

constexpr DType b16 = DType::bf16;
// {batch, heads, kv_heads, seq_q, seq_kv, head_dim, dtype, mask, layout, seed}
INSTANTIATE_TEST_SUITE_P(
    Bf16, FlashOnModel,
    ::testing::Values(cputest::Shape{1, 2, 0, 1, 0, 64, b16, "none", MaskLayout::broadcast, 1},
                      cputest::Shape{2, 4, 2, 97, 0, 59, b16, "causal", MaskLayout::broadcast, 2},
                      cputest::Shape{1, 1, 0, 1025, 0, 1, b16, "window:100", MaskLayout::broadcast, 3},
                      cputest::Shape{1, 2, 0, 301, 0, 128, b16, "block:32", MaskLayout::broadcast, 4},
                      cputest::Shape{1, 2, 0, 97, 301, 64, b16, "none", MaskLayout::broadcast, 7},
                      cputest::Shape{1, 4, 1, 300, 97, 8, b16, "dense:0.5", MaskLayout::per_head, 5},
                      cputest::Shape{1, 1, 0, 97, 0, 256, b16, "causal", MaskLayout::broadcast, 6},
                      // tasks of several score blocks (125 rows each on this 5-row model)
                      cputest::Shape{1, 4, 0, 1100, 0, 64, b16, "causal", MaskLayout::broadcast, 8}));

// The backward's bf16 path (the five products on pairs, P and dS rounded) on the model kernels:
// dQ, dK, dV against float64 on odd tile edges (a query tile of 1, odd key tiles and head dims),
// GQA (the per-head sums), every mask kind; the plan's tiles are the measured ones.
class FlashTrainOnModel : public ::testing::TestWithParam<cputest::Shape> {};

TEST_P(FlashTrainOnModel, GradientsMatchFloat64AndPlan) {
  UseModel model;
  auto backends = cputest::cpuBackends(2);
  Backend& flash = *backends[1];
  WorkloadSpec spec = cputest::specOf(GetParam());
  spec.pass = Pass::train;
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  const RunResult r = runPoint(flash, spec, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_TRUE(r.accuracy.passed()) << summary(spec) << ": max abs error " << r.accuracy.max_abs_error << " > "
                                   << r.accuracy.tolerance;
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << summary(spec);
}

INSTANTIATE_TEST_SUITE_P(
    Bf16, FlashTrainOnModel,
    ::testing::Values(cputest::Shape{1, 2, 0, 1, 0, 64, b16, "none", MaskLayout::broadcast, 1},
                      cputest::Shape{2, 4, 2, 97, 0, 59, b16, "causal", MaskLayout::broadcast, 2},
                      cputest::Shape{1, 1, 0, 131, 0, 1, b16, "window:20", MaskLayout::broadcast, 3},
                      cputest::Shape{1, 2, 0, 129, 0, 128, b16, "block:32", MaskLayout::broadcast, 4},
                      cputest::Shape{1, 2, 0, 65, 130, 64, b16, "none", MaskLayout::broadcast, 8},
                      cputest::Shape{1, 4, 1, 70, 97, 8, b16, "dense:0.5", MaskLayout::per_head, 5},
                      cputest::Shape{1, 2, 1, 33, 80, 59, b16, "additive:0.5", MaskLayout::broadcast, 6},
                      cputest::Shape{1, 2, 0, 40, 70, 257, b16, "additive:0.5", MaskLayout::per_head, 7, DType::fp32}));

}  // namespace
}  // namespace attnscope::cpu
