// Every kernel variant's building blocks (packing from each dtype, the products, the softmax
// rows) against plain double-precision loops, on awkward sizes: partial strips and row blocks,
// k past one cache block, beta 0 over NaN. Variants this CPU lacks are compiled into the binary
// but skipped here, with a message naming what is missing.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/spec/dtype.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

class TileKernelsTest : public ::testing::TestWithParam<CpuIsa> {
 protected:
  void SetUp() override {
    if (!cpuSupports(GetParam()))
      GTEST_SKIP() << "variant " << toString(GetParam())
                   << " is compiled but not run: this CPU lacks " << cpuIsaMissing(GetParam())
                   << " (CPU features: " << cpuFeatureList() << ")";
  }
  const TileKernels& kernels() const { return tileKernels(GetParam()); }
};

// Values exactly representable in every dtype, so packing from fp16 / bf16 is exact.
std::vector<uint8_t> storeAs(DType d, const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * static_cast<size_t>(bytesPerElement(d)));
  for (size_t i = 0; i < values.size(); ++i) {
    if (d == DType::fp32) {
      reinterpret_cast<float*>(out.data())[i] = values[i];
    } else {
      reinterpret_cast<uint16_t*>(out.data())[i] = d == DType::fp16 ? floatToHalf(values[i]) : floatToBf16(values[i]);
    }
  }
  return out;
}

std::vector<float> representable(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-64, 64);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(dist(rng)) / 32.0f;  // 7 significant bits at most
  return v;
}

TEST_P(TileKernelsTest, NameAndShape) {
  EXPECT_EQ(kernels().isa, GetParam());
  EXPECT_GE(kernels().nr, 8);
  EXPECT_GE(kernels().mr, 1);
  EXPECT_EQ(kernels().packedFloats(3, 1), 3 * kernels().nr);
}

TEST_P(TileKernelsTest, ProductsMatchDoubleLoops) {
  std::mt19937 rng(7);
  const TileKernels& g = kernels();
  for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
    for (bool transposed : {true, false})
      for (int64_t m : {1, 5, 13, 64})
        for (int64_t n : {1, 7, 16, 33, 64, 70})
          for (int64_t k : {1, 8, 59, 300}) {
            const int64_t ld = (transposed ? k : n) + 3;  // a row stride wider than the rows
            const std::vector<float> a = representable(static_cast<size_t>(m * k), rng);
            const std::vector<float> b = representable(static_cast<size_t>((transposed ? n : k) * ld), rng);
            const std::vector<uint8_t> stored = storeAs(dtype, b);
            std::vector<float> packed(static_cast<size_t>(g.packedFloats(k, n)), std::nanf(""));
            g.pack_b(dtype, stored.data(), ld, transposed, k, n, packed.data());
            for (float beta : {0.0f, 1.0f}) {
              const int64_t ldc = n + 2;
              std::vector<float> c(static_cast<size_t>(m * ldc), beta == 0.0f ? std::nanf("") : 0.25f);
              // Packed, and (fp32 B whose rows are whole strips) in place.
              const bool in_place = dtype == DType::fp32 && !transposed && !g.needsPacking(n) && beta == 1.0f;
              if (in_place)
                g.gemmRows(m, n, k, 0.5f, a.data(), k, b.data(), ld, beta, c.data(), ldc);
              else
                g.gemmPacked(m, n, k, 0.5f, a.data(), k, packed.data(), beta, c.data(), ldc);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  double want = beta == 0.0f ? 0.0 : 0.25;
                  for (int64_t p = 0; p < k; ++p)
                    want += 0.5 * a[i * k + p] * static_cast<double>(b[transposed ? j * ld + p : p * ld + j]);
                  ASSERT_NEAR(c[i * ldc + j], want, 1e-4 * (1.0 + std::abs(want)))
                      << toString(dtype) << (transposed ? " B^T" : " B") << " m=" << m << " n=" << n << " k=" << k
                      << " beta=" << beta << " at (" << i << ", " << j << ")";
                }
              for (int64_t i = 0; i < m; ++i)  // the columns past n are left alone
                for (int64_t j = n; j < ldc; ++j)
                  if (beta != 0.0f) {
                    ASSERT_EQ(c[i * ldc + j], 0.25f);
                  }
            }
          }
}

// gemm_at reads A transposed in place: the same sums in the same order as gemm on a transposed
// copy, so bit for bit equal to it, and within float64's tolerance; m past one micro-kernel
// (partial row blocks), k past one cache block, an lda wider than m, beta 0 over NaN.
TEST_P(TileKernelsTest, TransposedAProductEqualsProductOnTransposedCopy) {
  std::mt19937 rng(9);
  const TileKernels& g = kernels();
  ASSERT_NE(g.gemm_at, nullptr);
  for (int64_t m : {1, 5, 13, 64, 128})
    for (int64_t n : {1, 33, 64})
      for (int64_t k : {1, 59, 300}) {
        const int64_t lda = m + 5;
        const std::vector<float> at = representable(static_cast<size_t>(k * lda), rng);  // A^T, k rows of m
        std::vector<float> a(static_cast<size_t>(m * k));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < k; ++p) a[i * k + p] = at[p * lda + i];
        const std::vector<float> b = representable(static_cast<size_t>(k * n), rng);
        std::vector<float> packed(static_cast<size_t>(g.packedFloats(k, n)));
        g.pack_b(DType::fp32, b.data(), n, false, k, n, packed.data());
        for (float beta : {0.0f, 1.0f}) {
          std::vector<float> c(static_cast<size_t>(m * n), beta == 0.0f ? std::nanf("") : 0.25f), want = c;
          g.gemmPackedAt(m, n, k, 0.5f, at.data(), lda, packed.data(), beta, c.data(), n);
          g.gemmPacked(m, n, k, 0.5f, a.data(), k, packed.data(), beta, want.data(), n);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              ASSERT_EQ(c[i * n + j], want[i * n + j]) << "m=" << m << " n=" << n << " k=" << k << " beta=" << beta
                                                       << " at (" << i << ", " << j << ")";
              double exact = beta == 0.0f ? 0.0 : 0.25;
              for (int64_t p = 0; p < k; ++p) exact += 0.5 * a[i * k + p] * static_cast<double>(b[p * n + j]);
              ASSERT_NEAR(c[i * n + j], exact, 1e-4 * (1.0 + std::abs(exact)));
            }
        }
      }
}

TEST_P(TileKernelsTest, SoftmaxRowsMatchLibm) {
  const TileKernels& g = kernels();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (int64_t n : {0, 1, 7, 8, 9, 31, 256, 1025}) {
    std::vector<float> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) in[j] = -140.0f + 150.0f * static_cast<float>(j) / static_cast<float>(n);
    if (n > 2) in[1] = -kInf;  // a masked score
    float want_max = -kInf;
    for (float x : in) want_max = std::max(want_max, x);
    EXPECT_EQ(g.row_max(in.data(), n), want_max) << n;
    const float sum = g.exp2_shifted(in.data(), out.data(), n, 2.0f, 1.5f);
    double want_sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double x = (in[j] - 2.0f) * 1.5f;  // the argument as the kernels round it
      const double want = x < -126.0 ? 0.0 : std::exp2(x);
      want_sum += want;
      if (want == 0.0)
        EXPECT_EQ(out[j], 0.0f) << n << " " << j;
      else
        EXPECT_NEAR(out[j] / want, 1.0, 4e-7) << n << " " << j;
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * (1.0 + want_sum)) << n;
    std::vector<float> x = in;
    g.scale_row(x.data(), n, -0.5f);
    for (int64_t j = 0; j < n; ++j) EXPECT_EQ(x[j], -0.5f * in[j]);
  }
}

// The wide variants' softmax rows against avx2's: every exp2 element and every row max bit for bit
// (the same operations lane for lane), the sums within their order of addition; every length
// from 0 to 70 (each tail of 16 and of 8 lanes) and some long rows.
TEST_P(TileKernelsTest, SoftmaxRowsAgreeWithAvx2BitForBit) {
  if (GetParam() == CpuIsa::avx2 || GetParam() == CpuIsa::baseline) GTEST_SKIP() << "avx2 itself, or no exp2 lanes";
  ASSERT_TRUE(cpuSupports(CpuIsa::avx2));
  const TileKernels& g = kernels();
  const TileKernels& ref = tileKernels(CpuIsa::avx2);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-200.0f, 40.0f);
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (int64_t n : {255, 256, 1023, 4097}) lengths.push_back(n);
  for (int64_t n : lengths) {
    std::vector<float> in(static_cast<size_t>(n));
    for (float& x : in) x = dist(rng);
    if (n > 3) in[2] = -std::numeric_limits<float>::infinity();
    if (n > 5) in[5] = -126.0f;
    // Shifted and scaled to about -126: the least exponents the lanes keep, and the cut to 0.
    if (n > 8) in[7] = -176.8f, in[8] = -177.0f, in[6] = -176.9f;
    ASSERT_EQ(g.row_max(in.data(), n), ref.row_max(in.data(), n)) << n;
    std::vector<float> out(in.size()), want(in.size());
    const float sum = g.exp2_shifted(in.data(), out.data(), n, 3.0f, 0.7f);
    const float want_sum = ref.exp2_shifted(in.data(), want.data(), n, 3.0f, 0.7f);
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(out[j], want[j]) << n << " " << j << " in " << in[j];
    EXPECT_NEAR(sum, want_sum, 1e-6f * want_sum) << n;
    std::vector<float> x = in, y = in;
    g.scale_row(x.data(), n, 0.37f);
    ref.scale_row(y.data(), n, 0.37f);
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(x[j], y[j]) << n << " " << j;
  }
}

std::string variantName(const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(toString(info.param)); }

INSTANTIATE_TEST_SUITE_P(Variants, TileKernelsTest, ::testing::ValuesIn(kAllCpuIsas), variantName);

TEST(CpuIsa, ChoiceAndOverride) {
  EXPECT_TRUE(cpuSupports(CpuIsa::baseline));
  EXPECT_TRUE(cpuSupports(bestCpuIsa()));
  for (CpuIsa i : kAllCpuIsas) EXPECT_EQ(parseCpuIsa(toString(i)), i);
  for (CpuIsa i : kAllCpuIsas) EXPECT_EQ(cpuIsaMissing(i).empty(), cpuSupports(i)) << toString(i) << ": " << cpuIsaMissing(i);
  EXPECT_FALSE(parseCpuIsa("sse3").has_value());
  const bool env_set = std::getenv("ATTNSCOPE_CPU_ISA") != nullptr;
  if (!env_set) {
    EXPECT_EQ(activeCpuIsa(), bestCpuIsa());
  }
  setCpuIsaOverride(CpuIsa::baseline);
  EXPECT_EQ(activeCpuIsa(), CpuIsa::baseline);
  EXPECT_EQ(activeTileKernels().isa, CpuIsa::baseline);
  EXPECT_NE(cpuKernelDescription().find("forced"), std::string::npos) << cpuKernelDescription();
  setCpuIsaOverride(std::nullopt);
  if (!env_set) {
    EXPECT_EQ(activeCpuIsa(), bestCpuIsa());
  }
  for (CpuIsa i : kAllCpuIsas)
    if (!cpuSupports(i)) {
      EXPECT_THROW(setCpuIsaOverride(i), std::invalid_argument) << toString(i);
    }
}

}  // namespace
}  // namespace attnscope::cpu
