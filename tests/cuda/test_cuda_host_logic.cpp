// Host-side logic of the CUDA backends, tested without a GPU: tile spans and tile skipping for
// every mask kind (against core's mask rules, by brute force), memory plans, chunk size choice,
// kernel selection and the device requirements behind support().
#include <gtest/gtest.h>

#include <tuple>

#include "core/spec/mask.h"
#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_plans.h"
#include "kernels/cuda/flash_tiling.h"
#include "kernels/cuda/kernel_selection.h"

using namespace attnscope;
using namespace attnscope::cuda;

namespace {

MaskSpec maskOf(TileMask m, int64_t w) {
  MaskSpec s;
  s.kind = static_cast<MaskKind>(static_cast<int>(m));
  s.width = w;
  return s;
}

WorkloadSpec specOf(int64_t b, int64_t h, int64_t hkv, int64_t lq, int64_t lkv, int64_t d, DType dt) {
  WorkloadSpec s;
  s.batch = b;
  s.heads = h;
  s.kv_heads = hkv;
  s.seq_q = lq;
  s.seq_kv = lkv;
  s.head_dim = d;
  s.dtype = dt;
  return s;
}

}  // namespace

TEST(CudaTiling, KeyRangesMatchCoreMaskRules) {
  for (auto m : {TileMask::none, TileMask::causal, TileMask::window, TileMask::block, TileMask::dense})
    for (auto [lq, lkv] : {std::pair<int64_t, int64_t>{97, 97}, {1, 97}, {97, 33}, {33, 97}, {64, 64}})
      for (int64_t w : {1, 7, 64}) {
        if (m == TileMask::block && lq != lkv) continue;
        const MaskSpec ms = maskOf(m, w);
        for (int64_t i = 0; i < lq; ++i) {
          const KeyRange r = visibleKeys(ms, i, lq, lkv);
          ASSERT_EQ(keyBegin(m, w, i, lq, lkv), r.begin) << toString(ms) << " i " << i;
          ASSERT_EQ(keyEnd(m, w, i, lq, lkv), r.end) << toString(ms) << " i " << i;
          for (int64_t j = 0; j < lkv; ++j)
            ASSERT_EQ(keyVisible(m, w, i, j, lq, lkv), maskAllows(ms, i, j, lq, lkv))
                << "mask " << toString(ms) << " i " << i << " j " << j << " Lq " << lq << " Lkv " << lkv;
        }
      }
}

// Every tile the kernel skips holds no visible pair; every tile it computes without the mask
// holds only visible, in-range pairs.
TEST(CudaTiling, SkippedTilesAreEmptyAndUnmaskedTilesAreFull) {
  for (auto m : {TileMask::none, TileMask::causal, TileMask::window, TileMask::block, TileMask::dense})
    for (auto [lq, lkv] : {std::pair<int64_t, int64_t>{1, 1}, {97, 97}, {1025, 1025}, {1, 300}, {300, 97}, {130, 700}})
      for (int64_t w : {1, 50, 128})
        for (auto [bm, bn] : {std::pair<int64_t, int64_t>{128, 64}, {64, 32}, {16, 32}}) {
          if (m == TileMask::block && lq != lkv) continue;
          const MaskSpec ms = maskOf(m, w);
          for (int64_t m0 = 0; m0 < lq; m0 += bm) {
            const int64_t m1 = std::min(m0 + bm, lq);
            const KeyTileSpan span = keyTileSpan(m, w, m0, m1, lq, lkv, bn);
            for (int64_t n0 = 0; n0 < lkv; n0 += bn) {
              bool any = false, all = n0 + bn <= lkv;
              for (int64_t i = m0; i < m1; ++i)
                for (int64_t j = n0; j < std::min(n0 + bn, lkv); ++j) {
                  const bool vis = maskAllows(ms, i, j, lq, lkv);
                  any |= vis;
                  all &= vis;
                }
              const bool visited = n0 / bn >= span.first && n0 / bn < span.last;
              ASSERT_EQ(visited, any) << toString(ms) << " block " << m0 << " tile " << n0;
              if (visited && !tileNeedsMask(m, w, m0, m1, n0, bn, lq, lkv)) {
                ASSERT_TRUE(all) << toString(ms) << " block " << m0 << " tile " << n0;
              }
              if (m == TileMask::dense && visited) {
                ASSERT_TRUE(tileNeedsMask(m, w, m0, m1, n0, bn, lq, lkv));
              }
            }
          }
        }
}

TEST(CudaTiling, CountsPerMaskKind) {
  // 1024 x 1024 in 64 x 64 tiles: 16 x 16 = 256 tiles.
  TileCounts none = countTiles(TileMask::none, 0, 1024, 1024, 64, 64);
  EXPECT_EQ(none.total, 256);
  EXPECT_EQ(none.visited, 256);
  EXPECT_EQ(none.masked, 0);
  TileCounts causal = countTiles(TileMask::causal, 0, 1024, 1024, 64, 64);
  EXPECT_EQ(causal.visited, 16 * 17 / 2);  // lower triangle with the diagonal
  EXPECT_EQ(causal.masked, 16);            // only the diagonal tiles
  EXPECT_EQ(causal.skipped(), 256 - 136);
  // Window 128 at 64 x 64: each query block sees its own tile and up to two before it.
  TileCounts window = countTiles(TileMask::window, 128, 1024, 1024, 64, 64);
  EXPECT_EQ(window.visited, 1 + 2 + 14 * 3);
  EXPECT_EQ(window.masked, window.visited - 15);  // from the second block on, the tile before the diagonal is full
  // Block 256 at 64 x 64: 4 query blocks x 4 key tiles per 256-block, all full.
  TileCounts block = countTiles(TileMask::block, 256, 1024, 1024, 64, 64);
  EXPECT_EQ(block.visited, 4 * 16);
  EXPECT_EQ(block.masked, 0);
  // Lengths that are not tile multiples: the ragged last tile needs the mask.
  TileCounts ragged = countTiles(TileMask::none, 0, 97, 97, 64, 64);
  EXPECT_EQ(ragged.total, 4);
  EXPECT_EQ(ragged.masked, 2);
  // Dense: everything visited, everything masked.
  TileCounts dense = countTiles(TileMask::dense, 0, 1025, 1025, 128, 64);
  EXPECT_EQ(dense.visited, dense.total);
  EXPECT_EQ(dense.masked, dense.total);
  // Causal with Lq > Lkv (bottom-right aligned): the first Lq - Lkv queries see nothing.
  TileCounts tall = countTiles(TileMask::causal, 0, 256, 64, 64, 64);
  EXPECT_EQ(tall.visited, 1);
}

TEST(CudaPlans, ChunkRows) {
  WorkloadSpec s = specOf(1, 8, 8, 4096, 4096, 64, DType::fp16);
  // Rows of scores: 8 heads x 4096 keys x 2 bytes = 64 KiB; 256 MiB holds 4096 rows: one chunk.
  EXPECT_EQ(chooseChunkRows(s, 0, kDefaultChunkScoreBudget), 4096);
  // A 1 MiB budget holds 16 rows.
  EXPECT_EQ(chooseChunkRows(s, 0, int64_t{1} << 20), 16);
  // Balanced: 1025 rows under a 1024-row budget are two chunks of 513.
  s.seq_q = s.seq_kv = 1025;
  const int64_t row_bytes = 8 * 1025 * 2;
  EXPECT_EQ(chooseChunkRows(s, 0, 1024 * row_bytes), 513);
  // A budget below one row still gives one row; requested rows are capped at Lq.
  EXPECT_EQ(chooseChunkRows(s, 0, 1), 1);
  EXPECT_EQ(chooseChunkRows(s, 100, kDefaultChunkScoreBudget), 100);
  EXPECT_EQ(chooseChunkRows(s, 5000, kDefaultChunkScoreBudget), 1025);
}

TEST(CudaPlans, MathPlanIsTheAllocationList) {
  WorkloadSpec s = specOf(2, 8, 2, 97, 130, 59, DType::fp16);
  const int64_t io = s.ioBytes();
  MemoryPlan p = planMaterialising(s, s.seq_q);
  const int64_t scores = 2 * 8 * 97 * 130 * 2;
  EXPECT_EQ(p.peakBytes(), io + kCublasWorkspaceBytes + 2 * scores);
  EXPECT_EQ(p.ioBytes(), io);
  EXPECT_EQ(p.steps[p.peakStep()], "softmax");

  // Dense per-head mask: the boolean mask is input-side, the additive copy is in the input type.
  s.mask.kind = MaskKind::dense;
  s.mask_layout = MaskLayout::per_head;
  p = planMaterialising(s, s.seq_q);
  EXPECT_EQ(p.ioBytes(), s.ioBytes());
  EXPECT_EQ(p.peakBytes(), s.ioBytes() + kCublasWorkspaceBytes + 3 * scores);
  s.mask_layout = MaskLayout::broadcast;
  p = planMaterialising(s, s.seq_q);
  EXPECT_EQ(p.peakBytes(), s.ioBytes() + kCublasWorkspaceBytes + 2 * scores + 97 * 130 * 2);

  // Sizes and plan agree buffer by buffer.
  const MaterialisingSizes z = materialisingSizes(s, 10);
  EXPECT_EQ(z.chunks, 10);
  EXPECT_EQ(z.scores, 2 * 8 * 10 * 130 * 2);
  EXPECT_EQ(z.bias, 10 * 130 * 2);
  const MemoryPlan chunked = planMaterialising(s, 10);
  EXPECT_EQ(chunked.peakBytes(),
            z.q + z.k + z.v + z.o + z.mask + z.workspace + z.bias + z.scores + z.probs);
}

TEST(CudaPlans, ChunkedMemoryGrowsWithChunkNotLength) {
  WorkloadSpec s = specOf(1, 16, 16, 16384, 16384, 128, DType::bf16);
  const int64_t rows = chooseChunkRows(s, 0, kDefaultChunkScoreBudget);
  const int64_t chunked = planMaterialising(s, rows).peakBytes();
  const int64_t math = planMaterialising(s, s.seq_q).peakBytes();
  EXPECT_LE(materialisingSizes(s, rows).scores, kDefaultChunkScoreBudget);
  EXPECT_LT(chunked, math / 8);
}

TEST(CudaPlans, FlashPeakIsInputsOutputsAndLse) {
  WorkloadSpec s = specOf(1, 16, 16, 4096, 4096, 128, DType::fp16);
  const MemoryPlan p = planFlash(s);
  EXPECT_EQ(p.peakBytes(), s.ioBytes() + 16 * 4096 * 4);
  EXPECT_LE(static_cast<double>(p.peakBytes()), 1.05 * static_cast<double>(s.ioBytes()));
  s.mask.kind = MaskKind::dense;
  EXPECT_EQ(planFlash(s).ioBytes(), s.ioBytes());
}

TEST(CudaSelection, HeadDimBucketsAndRefusals) {
  EXPECT_EQ(headDimBucket(8), 64);
  EXPECT_EQ(headDimBucket(64), 64);
  EXPECT_EQ(headDimBucket(72), 128);
  EXPECT_EQ(headDimBucket(128), 128);
  EXPECT_EQ(headDimBucket(136), 256);
  EXPECT_EQ(headDimBucket(256), 256);
  EXPECT_EQ(headDimBucket(264), 0);
  for (int64_t d : {8, 16, 64, 72, 128, 200, 256}) EXPECT_FALSE(flashHeadDimProblem(d)) << d;
  for (int64_t d : {1, 4, 59, 100, 257, 264}) {
    auto why = flashHeadDimProblem(d);
    ASSERT_TRUE(why) << d;
    EXPECT_NE(why->find("multiple of 8"), std::string::npos);
    EXPECT_NE(why->find(std::to_string(d)), std::string::npos);
  }
}

TEST(CudaSelection, InstancePerDtypeAndHeadDim) {
  using Row = std::tuple<DType, int64_t, int, bool, int, int>;  // dtype, D, bucket, tensor cores, BM, BN
  for (auto [dt, d, bucket, tc, bm, bn] :
       {Row{DType::fp16, 64, 64, true, 128, 64}, Row{DType::bf16, 8, 64, true, 128, 64},
        Row{DType::fp16, 128, 128, true, 128, 64}, Row{DType::bf16, 96, 128, true, 128, 64},
        Row{DType::fp16, 256, 256, true, 64, 32}, Row{DType::bf16, 200, 256, true, 64, 32},
        Row{DType::fp32, 64, 64, false, 16, 32}, Row{DType::fp32, 128, 128, false, 16, 32},
        Row{DType::fp32, 256, 256, false, 16, 32}}) {
    const FlashKernelConfig k = selectFlashKernel(dt, d);
    EXPECT_EQ(k.head_dim_bucket, bucket) << k.name;
    EXPECT_EQ(k.tensor_cores, tc) << k.name;
    EXPECT_EQ(k.block_m, bm) << k.name;
    EXPECT_EQ(k.block_n, bn) << k.name;
    EXPECT_EQ(k.warps, 4);
    // Every instance fits the 227 KiB an sm_90 block may opt into, and A100's 163 KiB.
    EXPECT_LE(k.smem_bytes, 163 * 1024) << k.name;
  }
  EXPECT_EQ(selectFlashKernel(DType::fp16, 128).name, "flash_fwd_mma<fp16, 128, 128x64>");
  EXPECT_EQ(selectFlashKernel(DType::fp16, 128).smem_bytes, (128 + 4 * 64) * 136 * 2);
  EXPECT_EQ(selectFlashKernel(DType::fp16, 59).head_dim_bucket, 0);
}

TEST(CudaSelection, BuiltArchitectures) {
  EXPECT_EQ(builtArchitectures("80;90"), (std::vector<int>{80, 90}));
  EXPECT_EQ(builtArchitectures("90a,80-real"), (std::vector<int>{80, 90}));
  EXPECT_TRUE(builtArchitectures("").empty());
}

TEST(CudaSelection, DeviceProblems) {
  // What support() assembles: the checks every CUDA backend needs, then the backend's own.
  auto flash = [](const WorkloadSpec& s, const DeviceCaps& c, const std::vector<int>& a, int64_t peak) {
    auto why = deviceProblems(s, c, a, peak);
    for (auto& p : flashDeviceProblems(s, c)) why.push_back(p);
    return why;
  };
  auto math = [](const WorkloadSpec& s, const DeviceCaps& c, const std::vector<int>& a, int64_t peak) {
    auto why = deviceProblems(s, c, a, peak);
    for (auto& p : cublasShapeProblems(s)) why.push_back(p);
    return why;
  };
  const std::vector<int> archs{80, 90};
  DeviceCaps h200{9, 0, int64_t{141} << 30, 227 * 1024};
  WorkloadSpec s = specOf(1, 8, 8, 1024, 1024, 64, DType::bf16);
  EXPECT_TRUE(math(s, h200, archs, 1 << 20).empty());
  EXPECT_TRUE(flash(s, h200, archs, 1 << 20).empty());

  DeviceCaps turing{7, 5, int64_t{16} << 30, 64 * 1024};
  auto why = math(s, turing, archs, 1 << 20);
  ASSERT_EQ(why.size(), 2u);
  EXPECT_NE(why[0].find("sm_80, sm_90"), std::string::npos);
  EXPECT_NE(why[1].find("bf16 needs compute capability 8.0"), std::string::npos);
  // Without the arch mismatch (a build for 75), fp16 flash still needs 8.0 for m16n8k16.
  s.dtype = DType::fp16;
  why = flash(s, turing, {75}, 1 << 20);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("m16n8k16"), std::string::npos);
  DeviceCaps pascal{6, 1, int64_t{8} << 30, 48 * 1024};
  why = flash(s, pascal, {60}, 1 << 20);
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why[0].find("tensor cores"), std::string::npos);

  s.head_dim = 59;
  why = flash(s, h200, archs, 1 << 20);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("multiple of 8"), std::string::npos);
  EXPECT_TRUE(math(s, h200, archs, 1 << 20).empty());

  why = math(s, h200, archs, h200.memory_total + 1);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("exceeds the device's"), std::string::npos);
  // Shared memory of the picked instance against the device's limit (fp32 at 256: the SIMT tile).
  s.head_dim = 256;
  s.dtype = DType::fp32;
  DeviceCaps small_smem{8, 0, int64_t{16} << 30, 48 * 1024};
  why = flashDeviceProblems(s, small_smem);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("shared memory"), std::string::npos);
}

TEST(CudaSelection, FlashTilesAreTheLaunchersTiles) {
  // selectFlashKernel reports what flash_tiling.h gives the launchers, nothing of its own.
  for (int d : {64, 128, 256}) {
    const FlashKernelConfig half = selectFlashKernel(DType::fp16, d);
    EXPECT_EQ(half.block_m, mmaTile(d).block_m);
    EXPECT_EQ(half.block_n, mmaTile(d).block_n);
    EXPECT_EQ(half.smem_bytes, mmaSmemBytes(d, 2));
    const FlashKernelConfig single = selectFlashKernel(DType::fp32, d);
    EXPECT_EQ(single.block_m, simtTile().block_m);
    EXPECT_EQ(single.smem_bytes, simtSmemBytes(d));
  }
  // The 128 bucket: Q 128 rows plus K and V double-buffered, 64 keys each, rows of 128 + 8.
  EXPECT_EQ(mmaSmemBytes(128, 2), (128 + 4 * 64) * (128 + 8) * 2);
}
