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
  // Steps: inputs, attention. Peak: at attention, with every worker's tiles live.
  MemoryPlan plan(const WorkloadSpec& spec) const override;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) override;

  // Rows of Q and of K/V in one tile. The first is sized for the L2 cache with head_dim 64; the
  // BLAS reaches most of its rate from about 64 x 64 tiles on.
  static constexpr int64_t kQueryTile = 128;
  static constexpr int64_t kKeyTile = 256;
};

}  // namespace attnscope::cpu
