// Host-side logic of the CUDA backward (pass = train), tested without a GPU: the train plans of
// cuda.math and cuda.flash (steps, lifetimes, peaks), the flash backward's tiles, shared-memory
// layout and grids, which (query block, key tile) pairs its two kernels visit (against core's
// mask rules, by brute force), and the device check of its shared memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/spec/mask.h"
#include "core/check/reference_grad.h"
#include "kernels/cuda/cuda_plans.h"
#include "kernels/cuda/flash_bwd_tiling.h"
#include "kernels/cuda/kernel_selection.h"

using namespace attnscope;
using namespace attnscope::cuda;

namespace {

WorkloadSpec trainSpec(int64_t b, int64_t h, int64_t hkv, int64_t lq, int64_t lkv, int64_t d, DType dt,
                       Checkpoint c = Checkpoint::none) {
  WorkloadSpec s;
  s.batch = b;
  s.heads = h;
  s.kv_heads = hkv;
  s.seq_q = lq;
  s.seq_kv = lkv;
  s.head_dim = d;
  s.dtype = dt;
  s.pass = Pass::train;
  s.checkpoint = c;
  return s;
}

using Lives = std::vector<std::pair<std::string, std::string>>;

Lives lifetimes(const MemoryPlan& p, const std::string& name) {
  Lives out;
  for (const auto& b : p.buffers)
    if (b.name == name) out.emplace_back(p.steps[b.first_step], p.steps[b.last_step]);
  return out;
}

}  // namespace

TEST(CudaTrainPlans, MathKeepsPForTheBackward) {
  const WorkloadSpec s = trainSpec(2, 4, 2, 97, 130, 59, DType::fp16);
  const MemoryPlan p = planMathTrain(s);
  EXPECT_EQ(p.steps, (std::vector<std::string>{"inputs", "scores", "softmax", "pv", "backward dS", "backward dQ",
                                               "backward dK dV"}));
  EXPECT_EQ(lifetimes(p, "probs P"), (Lives{{"softmax", "backward dK dV"}}));
  EXPECT_EQ(lifetimes(p, "scores S"), (Lives{{"scores", "softmax"}}));
  EXPECT_EQ(lifetimes(p, kDsBufferName), (Lives{{"backward dS", "backward dK dV"}}));
  EXPECT_EQ(lifetimes(p, "dq"), (Lives{{"inputs", "backward dK dV"}}));
  const int64_t scores = 2 * 4 * 97 * 130 * 2;
  const int64_t io = s.ioBytes() + trainIoBytes(s);
  EXPECT_EQ(trainIoBytes(s), 2 * s.qElements() * 2 + 2 * s.kvElements() * 2);
  EXPECT_EQ(p.ioBytes(), io);
  // S + P in the forward, P + dS in the backward: the same, first reached at the softmax.
  EXPECT_EQ(p.peakBytes(), io + kCublasWorkspaceBytes + 2 * scores);
  EXPECT_EQ(p.steps[p.peakStep()], "softmax");
  EXPECT_EQ(p.bytesAt(4), io + kCublasWorkspaceBytes + 2 * scores);

  // A dense mask adds its additive copy to the forward only.
  WorkloadSpec dense = s;
  dense.mask.kind = MaskKind::dense;
  const MemoryPlan pd = planMathTrain(dense);
  EXPECT_EQ(pd.peakBytes(), dense.ioBytes() + trainIoBytes(dense) + kCublasWorkspaceBytes + 2 * scores + 97 * 130 * 2);
  EXPECT_EQ(pd.bytesAt(4), pd.peakBytes() - 97 * 130 * 2);
}

TEST(CudaTrainPlans, MathCheckpointFreesPAfterTheForward) {
  const WorkloadSpec s = trainSpec(1, 2, 2, 64, 64, 32, DType::bf16, Checkpoint::attention);
  const MemoryPlan p = planMathTrain(s);
  EXPECT_EQ(p.steps, (std::vector<std::string>{"inputs", "scores", "softmax", "pv", "recompute scores",
                                               "recompute softmax", "recompute pv", "backward dS", "backward dQ",
                                               "backward dK dV"}));
  EXPECT_EQ(lifetimes(p, "probs P"), (Lives{{"softmax", "pv"}, {"recompute softmax", "backward dK dV"}}));
  EXPECT_EQ(lifetimes(p, "scores S"), (Lives{{"scores", "softmax"}, {"recompute scores", "recompute softmax"}}));
  const int64_t scores = s.scoreElements() * 2;
  const int64_t base = s.ioBytes() + trainIoBytes(s) + kCublasWorkspaceBytes;
  EXPECT_EQ(p.bytesAt(3), base + scores);  // P of the forward, until its output
  EXPECT_EQ(p.bytesAt(4), base + scores);  // recompute scores: S only, the first P is gone
  EXPECT_EQ(p.peakBytes(), base + 2 * scores);
}

TEST(CudaTrainPlans, FlashHoldsOnlyTheTensorsAndTheLogSumExp) {
  for (Checkpoint c : {Checkpoint::none, Checkpoint::attention}) {
    const WorkloadSpec s = trainSpec(2, 8, 2, 1000, 3000, 128, DType::fp16, c);
    const MemoryPlan p = planFlashTrain(s);
    std::vector<std::string> steps{"inputs", "attention"};
    if (c == Checkpoint::attention) steps.push_back("recompute attention");
    steps.push_back("backward dK dV");
    steps.push_back("backward dQ");
    EXPECT_EQ(p.steps, steps);
    EXPECT_EQ(p.peakBytes(), s.ioBytes() + trainIoBytes(s) + 2 * 8 * 1000 * 4);
    EXPECT_EQ(p.ioBytes(), s.ioBytes() + trainIoBytes(s));
    for (const auto& b : p.buffers) EXPECT_EQ(p.steps[b.last_step], "backward dQ") << b.name;
  }
}

TEST(CudaFlashBackward, TilesAndSharedMemory) {
  EXPECT_EQ(flashBwdTile(8).block_m, 32);
  EXPECT_EQ(flashBwdTile(128).block_n, 32);
  EXPECT_EQ(flashBwdTile(136).block_m, 16);
  EXPECT_EQ(flashBwdTile(256).block_n, 16);
  for (int64_t d = 8; d <= 256; d += 8) {
    const FlashBwdLayout l = flashBwdLayout(d);
    // The parts follow each other without overlap, in the order the header lists them.
    const std::vector<std::pair<int64_t, int64_t>> parts{
        {l.q, l.bm * d}, {l.g, l.bm * d}, {l.k, l.bn * d},  {l.v, l.bn * d}, {l.p, l.bm * l.bn},
        {l.ds, l.bm * l.bn}, {l.delta, l.bm}, {l.lse, l.bm}, {l.acc, std::max(2 * l.bn * d, l.bm * d)}};
    int64_t at = 0;
    for (const auto& [offset, size] : parts) {
      EXPECT_EQ(offset, at) << "head_dim " << d;
      at += size;
    }
    EXPECT_EQ(l.floats, at);
    EXPECT_EQ(flashBwdSmemBytes(d), 4 * at);
    // Within what A100 (163 KiB) and H100/H200 (227 KiB) allow a block.
    EXPECT_LE(flashBwdSmemBytes(d), 163 * 1024) << "head_dim " << d;
  }
  EXPECT_EQ(flashBwdSmemBytes(128), 4 * (4 * 32 * 128 + 2 * 32 * 32 + 2 * 32 + 2 * 32 * 128));
}

TEST(CudaFlashBackward, Grids) {
  const Grid3 keys = flashBwdKeyGrid(3, 2, 97, 64);
  EXPECT_EQ(keys.x, 4);  // 97 keys in tiles of 32
  EXPECT_EQ(keys.y, 2);
  EXPECT_EQ(keys.z, 3);
  const Grid3 queries = flashBwdQueryGrid(3, 8, 1, 256);
  EXPECT_EQ(queries.x, 1);
  EXPECT_EQ(queries.y, 8);
  EXPECT_EQ(flashBwdQueryGrid(1, 1, 33, 256).x, 3);  // tiles of 16 at head_dim 256
  // Offsets: [B, H, L, D] contiguous.
  EXPECT_EQ(rowOffset(1, 2, 3, 4 * 5 * 6, 5 * 6, 6), 1 * 120 + 2 * 30 + 3 * 6);
}

// Both kernels visit a (query block, key tile) pair exactly when some query of the block may see
// some key of the tile: nothing visible is skipped (a gradient would be missing), nothing
// invisible is visited needlessly.
TEST(CudaFlashBackward, VisitedPairsAreExactlyThoseWithAVisibleKey) {
  for (auto m : {TileMask::none, TileMask::causal, TileMask::window, TileMask::block, TileMask::dense})
    for (auto [lq, lkv] : {std::pair<int64_t, int64_t>{1, 1}, {97, 97}, {1, 300}, {300, 97}, {130, 200}, {90, 40}})
      for (int64_t w : {1, 17, 40})
        for (int64_t d : {64, 256}) {
          if (m == TileMask::block && lq != lkv) continue;
          MaskSpec ms;
          ms.kind = static_cast<MaskKind>(static_cast<int>(m));
          ms.width = w;
          const FlashBwdTile t = flashBwdTile(d);
          for (int64_t m0 = 0; m0 < lq; m0 += t.block_m) {
            const int64_t m1 = std::min(m0 + t.block_m, lq);
            for (int64_t tile = 0; tile * t.block_n < lkv; ++tile) {
              bool any = false;
              for (int64_t i = m0; i < m1; ++i)
                for (int64_t j = tile * t.block_n; j < std::min((tile + 1) * t.block_n, lkv); ++j)
                  any |= maskAllows(ms, i, j, lq, lkv);
              ASSERT_EQ(queryBlockSeesKeyTile(m, w, m0, m1, lq, lkv, t.block_n, tile), any)
                  << toString(ms) << " Lq " << lq << " Lkv " << lkv << " block " << m0 << " tile " << tile;
            }
          }
        }
}

TEST(CudaFlashBackward, SharedMemoryIsCheckedForTrainOnly) {
  WorkloadSpec s = trainSpec(1, 8, 8, 1024, 1024, 128, DType::fp16);
  const DeviceCaps h200{9, 0, int64_t{141} << 30, 227 * 1024};
  EXPECT_TRUE(flashDeviceProblems(s, h200).empty());
  const DeviceCaps a100{8, 0, int64_t{80} << 30, 163 * 1024};
  EXPECT_TRUE(flashDeviceProblems(s, a100).empty());
  // A device allowing 103 KiB runs the forward at head_dim 128 (102 KiB) but not the backward
  // (104.25 KiB).
  EXPECT_EQ(selectFlashKernel(DType::fp16, 128).smem_bytes, 102 * 1024);
  EXPECT_EQ(flashBwdSmemBytes(128), 106752);
  const DeviceCaps small{8, 0, int64_t{16} << 30, 103 * 1024};
  auto why = flashDeviceProblems(s, small);
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("the cuda.flash backward needs"), std::string::npos) << why[0];
  s.pass = Pass::forward;
  EXPECT_TRUE(flashDeviceProblems(s, small).empty());
}
