#pragma once
// cpu.flash: FlashAttention-2 style on the CPU. Work is split into (batch, head, query tile)
// tasks on the thread pool; each task walks the key tiles its queries can see with an online
// softmax, so no [Lq, Lkv] tensor ever exists. Memory: inputs, output, the log-sum-exp
// [B, H, Lq] fp32, and one set of tiles per worker thread; linear in sequence length.

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

class CpuFlashBackend final : public CpuBackend {
 public:
  explicit CpuFlashBackend(std::shared_ptr<TaskPool> pool = nullptr) : CpuBackend(std::move(pool)) {}

  std::string id() const override { return "cpu.flash"; }
  std::string description() const override;
  // Forward step: attention (peak of a forward: every worker's tiles live).
  std::unique_ptr<AttentionCore> makeCore(const WorkloadSpec& spec, RunTensors& t, RunContext& ctx) const override;
  void planCoreState(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails) const override;
  void planCoreForward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails, bool keep) const override;
  void planCoreBackward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails) const override;

  // Tiles: a task takes up to kBlocksPerTask blocks of about kScoreRows queries (rounded down to
  // whole micro-kernel rows) and walks the key tiles of kKeyTile rows; each key tile is packed
  // once per task and serves all its blocks; one block's scores stay in the L2 cache. Blocks per
  // task: as many as keep the task's Q rows within kTaskRowFloats (4 at head_dim 64, 2 at 128;
  // measured on Zen 3, docs/PERFORMANCE.md: packing fell from 7-8 % of cpu.flash's samples to
  // 2-4 %, and more blocks at head_dim 128 made the products slower).
  static constexpr int64_t kScoreRows = 128;
  static constexpr int64_t kBlocksPerTask = 4;
  static constexpr int64_t kTaskRowFloats = 4 * 128 * 64;
  static constexpr int64_t kKeyTile = 256;
};

}  // namespace attnscope::cpu
