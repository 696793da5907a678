#pragma once
// cpu.reference: attention the way a framework's math path computes it. S = scale * Q K^T and
// P = softmax(S) are whole [B, H, Lq, Lkv] fp32 tensors, a dense mask is held at its full layout,
// and fp16/bf16 inputs are upcast to fp32 copies for the products, so its memory grows with
// heads x seq_q x seq_kv exactly the way users see it grow.

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

class CpuReferenceBackend final : public CpuBackend {
 public:
  explicit CpuReferenceBackend(std::shared_ptr<TaskPool> pool = nullptr) : CpuBackend(std::move(pool)) {}

  std::string id() const override { return "cpu.reference"; }
  std::string description() const override;
  // Forward steps: scores, softmax, pv. Peak of a forward: at softmax, where S and P are both live.
  std::unique_ptr<AttentionCore> makeCore(const WorkloadSpec& spec, RunTensors& t, RunContext& ctx) const override;
  void planCoreForward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails, bool keep) const override;
  void planCoreBackward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails) const override;
};

}  // namespace attnscope::cpu
