// The layer's row products (kernels/cpu/layer_products.h) against float64 loops, on shapes that
// cut the weight into several column blocks (k * n past the L2 budget), leave a partial last strip
// and a partial last row block, read A's columns from several parts of several heads (the fused
// q, k, v), write into heads, and add a bias; fp32 (A read in place head by head, or converted
// where a row block crosses a batch), fp16 and bf16;
// one and two threads. The weight gradients (dw = a^T b, db) likewise over several chunks of rows
// and blocks of dw. The allocator's peak is the plan, byte for byte.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/backend/memory_plan.h"
#include "core/backend/tracking_allocator.h"
#include "core/spec/dtype.h"
#include "kernels/cpu/layer_products.h"
#include "kernels/cpu/task_pool.h"
#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

struct Stored {
  DType dtype;
  std::vector<uint8_t> bytes;
  std::vector<double> values;  // what the bytes hold, exactly
  Stored(DType d, size_t n, std::mt19937& rng) : dtype(d), bytes(n * bytesPerElement(d)), values(n) {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      const float x = dist(rng);
      if (d == DType::fp32) {
        reinterpret_cast<float*>(bytes.data())[i] = x;
        values[i] = x;
      } else if (d == DType::fp16) {
        const uint16_t h = floatToHalf(x);
        reinterpret_cast<uint16_t*>(bytes.data())[i] = h;
        values[i] = halfToFloat(h);
      } else {
        const uint16_t b = floatToBf16(x);
        reinterpret_cast<uint16_t*>(bytes.data())[i] = b;
        values[i] = bf16ToFloat(b);
      }
    }
  }
};

double valueAt(DType d, const std::vector<uint8_t>& bytes, size_t i) {
  if (d == DType::fp32) return reinterpret_cast<const float*>(bytes.data())[i];
  const uint16_t h = reinterpret_cast<const uint16_t*>(bytes.data())[i];
  return d == DType::fp16 ? halfToFloat(h) : bf16ToFloat(h);
}

struct Case {
  DType dtype;
  int64_t batch, len;      // rows = batch * len
  int64_t a_heads, a_d;    // A: one part of a_heads heads of a_d columns (1 head: a plain matrix)
  int64_t n;               // the product's columns, written as out_heads heads
  int64_t out_heads;
  bool transposed, bias;
  int threads;
};

std::string describe(const Case& c) {
  return std::string(toString(c.dtype)) + " rows " + std::to_string(c.batch) + "x" + std::to_string(c.len) +
         " k " + std::to_string(c.a_heads) + "x" + std::to_string(c.a_d) + " n " + std::to_string(c.n) +
         (c.transposed ? " w^T" : " w") + (c.bias ? " +bias" : "") + " threads " + std::to_string(c.threads);
}

void runCase(const Case& c) {
  SCOPED_TRACE(describe(c));
  std::mt19937 rng(7);
  const int64_t rows = c.batch * c.len, k = c.a_heads * c.a_d, n = c.n, od = n / c.out_heads;
  ASSERT_EQ(od * c.out_heads, n);
  Stored a(c.dtype, static_cast<size_t>(rows * k), rng), w(c.dtype, static_cast<size_t>(k * n), rng),
      bias(c.dtype, static_cast<size_t>(n), rng);
  std::vector<uint8_t> out(static_cast<size_t>(rows * n * bytesPerElement(c.dtype)), 0xff);
  RowMatrix am;
  am.dtype = c.dtype;
  am.rows_per_batch = c.len;
  am.parts.push_back({a.bytes.data(), c.a_heads, c.a_d});
  RowMatrix om;
  om.dtype = c.dtype;
  om.rows_per_batch = c.len;
  om.parts.push_back({out.data(), c.out_heads, od});

  HostAllocator alloc;
  RunContext ctx(alloc);
  TaskPool pool(c.threads);
  runRowProduct({&am, w.bytes.data(), c.transposed, c.bias ? bias.bytes.data() : nullptr, &om, k, n, "w", "p"}, rows,
                ctx, pool);
  MemoryPlan plan;
  planRowProduct(plan, 0, "p", "w", rows, k, n, c.threads, c.dtype);
  EXPECT_EQ(alloc.peakBytes(), plan.peakBytes());

  // Element (r, col) of A / out in their [B, heads, L, d] layouts.
  auto at = [](int64_t r, int64_t col, int64_t len, int64_t heads, int64_t d) {
    const int64_t b = r / len, l = r % len, h = col / d;
    return static_cast<size_t>(((b * heads + h) * len + l) * d + col % d);
  };
  const double tol = c.dtype == DType::fp32 ? 1e-4 : c.dtype == DType::fp16 ? 4e-3 : 3e-2;
  int bad = 0;
  for (int64_t r = 0; r < rows && bad < 5; ++r)
    for (int64_t j = 0; j < n && bad < 5; ++j) {
      double want = c.bias ? bias.values[static_cast<size_t>(j)] : 0.0, scale = 1.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = a.values[at(r, p, c.len, c.a_heads, c.a_d)];
        const double y = w.values[static_cast<size_t>(c.transposed ? j * k + p : p * n + j)];
        want += x * y;
        scale += std::fabs(x * y);
      }
      const double got = valueAt(c.dtype, out, at(r, j, c.len, c.out_heads, od));
      if (!(std::fabs(got - want) <= tol * scale)) {
        ADD_FAILURE() << "out(" << r << ", " << j << ") = " << got << ", float64 says " << want;
        ++bad;
      }
    }
}

// k * n past the L2 budget: several column blocks, the last one partial and its last strip
// partial; 101 rows: two whole row blocks of 48 and a partial one.
TEST(LayerProducts, SeveralColumnBlocksFp32) {
  for (int threads : {1, 2}) {
    runCase({DType::fp32, 1, 101, 1, 520, 1000, 1, true, true, threads});   // plain A, in place
    runCase({DType::fp32, 2, 37, 5, 104, 1000, 4, false, false, threads});  // heads in and out
  }
}

// K > N puts rows outside (each task a row block over every column block): k 2000 by 300 is
// three column blocks, the last partial; A from heads and plain; fp16 converted once per block.
TEST(LayerProducts, RowsOutsideWhenKExceedsN) {
  ASSERT_TRUE(RowProduct::Shape::of(101, 2000, 300, 2, DType::fp32).rows_outer);
  ASSERT_GT(RowProduct::Shape::of(101, 2000, 300, 2, DType::fp32).col_blocks, 1);
  for (int threads : {1, 2}) {
    runCase({DType::fp32, 1, 101, 1, 2000, 300, 1, false, true, threads});
    runCase({DType::fp32, 2, 37, 8, 250, 300, 3, true, false, threads});
    runCase({DType::fp16, 1, 101, 4, 500, 300, 1, false, true, threads});
  }
}

// Rows 1024 elements apart: plain fp32 rows are copied to longer rows before the product, and
// fp16 rows converted into longer rows (both orders).
TEST(LayerProducts, RowsFourKiBApart) {
  runCase({DType::fp32, 1, 101, 1, 1024, 1100, 1, true, true, 2});  // column blocks outside
  runCase({DType::fp32, 1, 101, 1, 1024, 320, 1, false, true, 2});  // rows outside
  runCase({DType::fp16, 1, 101, 1, 1024, 1100, 1, true, true, 2});
  runCase({DType::fp16, 1, 101, 1, 1024, 320, 1, false, true, 2});
}

TEST(LayerProducts, SeveralColumnBlocksFp16AndBf16) {
  for (DType d : {DType::fp16, DType::bf16}) {
    runCase({d, 1, 101, 1, 520, 1000, 1, true, true, 2});
    runCase({d, 2, 37, 5, 104, 1000, 4, false, false, 1});
  }
}

// dw = a^T b and db = a's column sums over 300 rows (a whole chunk of 256 and a partial one), M
// 300 and N 290 (two blocks each, the last strips partial), a and b read from heads.
void runGradientCase(DType dtype, int threads) {
  SCOPED_TRACE(std::string(toString(dtype)) + " threads " + std::to_string(threads));
  std::mt19937 rng(5);
  const int64_t batch = 2, len = 150, rows = batch * len, M = 300, N = 290;
  Stored a(dtype, static_cast<size_t>(rows * M), rng), b(dtype, static_cast<size_t>(rows * N), rng);
  std::vector<uint8_t> dw(static_cast<size_t>(M * N * bytesPerElement(dtype)));
  std::vector<uint8_t> db(static_cast<size_t>(M * bytesPerElement(dtype)));
  RowMatrix am, bm;
  am.dtype = bm.dtype = dtype;
  am.rows_per_batch = bm.rows_per_batch = len;
  am.parts.push_back({a.bytes.data(), 3, 100});
  bm.parts.push_back({b.bytes.data(), 2, 145});
  HostAllocator alloc;
  RunContext ctx(alloc);
  TaskPool pool(threads);
  WeightGradient g;
  g.a = &am;
  g.b = &bm;
  g.dw = dw.data();
  g.db = db.data();
  g.dtype = dtype;
  g.name = "dw";
  g.input = "b";
  runWeightGradient(g, rows, ctx, pool);
  MemoryPlan plan;
  planWeightGradient(plan, 0, "dw", "b", rows, M, N, threads, dtype);
  EXPECT_EQ(alloc.peakBytes(), plan.peakBytes());
  auto at = [&](int64_t r, int64_t col, int64_t heads, int64_t d) {
    const int64_t bb = r / len, l = r % len;
    return static_cast<size_t>(((bb * heads + col / d) * len + l) * d + col % d);
  };
  const double tol = dtype == DType::fp32 ? 1e-4 : dtype == DType::fp16 ? 4e-3 : 3e-2;
  int bad = 0;
  for (int64_t i = 0; i < M && bad < 5; ++i) {
    double sum = 0.0, sum_scale = 1.0;
    for (int64_t r = 0; r < rows; ++r) {
      sum += a.values[at(r, i, 3, 100)];
      sum_scale += std::fabs(a.values[at(r, i, 3, 100)]);
    }
    if (!(std::fabs(valueAt(dtype, db, static_cast<size_t>(i)) - sum) <= tol * sum_scale)) {
      ADD_FAILURE() << "db(" << i << ") = " << valueAt(dtype, db, static_cast<size_t>(i)) << ", float64 says " << sum;
      ++bad;
    }
    for (int64_t j = 0; j < N && bad < 5; ++j) {
      double want = 0.0, scale = 1.0;
      for (int64_t r = 0; r < rows; ++r) {
        const double x = a.values[at(r, i, 3, 100)] * b.values[at(r, j, 2, 145)];
        want += x;
        scale += std::fabs(x);
      }
      const double got = valueAt(dtype, dw, static_cast<size_t>(i * N + j));
      if (!(std::fabs(got - want) <= tol * scale)) {
        ADD_FAILURE() << "dw(" << i << ", " << j << ") = " << got << ", float64 says " << want;
        ++bad;
      }
    }
  }
}

TEST(LayerProducts, WeightGradientOverChunksAndBlocks) {
  for (DType d : {DType::fp32, DType::fp16, DType::bf16})
    for (int threads : {1, 2}) runGradientCase(d, threads);
}

// The plan's column blocks: a wide weight is cut into blocks of whole strips within the budget,
// and every column lands in exactly one block.
TEST(LayerProducts, ShapeCutsWideWeightsIntoColumnBlocks) {
  const int nr = activeTileKernels().nr;
  const auto s = RowProduct::Shape::of(1024, 1024, 3072, 2, DType::fp32);
  EXPECT_GT(s.col_blocks, 1);
  EXPECT_EQ(s.cols % nr, 0);
  EXPECT_LE(s.cols * 1024, 256 * 1024 + nr * 1024);
  EXPECT_GE(s.cols * s.col_blocks, 3072);
  EXPECT_LT(s.cols * (s.col_blocks - 1), 3072);
  EXPECT_GE(s.tasks, 2);
  const auto small = RowProduct::Shape::of(10, 16, 40, 2, DType::fp32);
  EXPECT_EQ(small.col_blocks, 1);
  EXPECT_EQ(small.cols, 40);
}

}  // namespace
}  // namespace attnscope::cpu
