#pragma once
// cuda.flash: one fused kernel, tiles of Q against tiles of K/V with an online softmax. fp16 and
// bf16 on tensor cores (mma.sync, fp32 accumulation), fp32 on the SIMT units; head_dim up to 256
// in multiples of 8; GQA/MQA by indexing; every mask kind with tiles outside the mask skipped;
// memory linear in sequence length (Q, K, V, O, mask, log-sum-exp).
// pass = train: the FlashAttention-2 backward (flash_bwd.cu): a dK dV kernel over key tiles, then
// a dQ kernel over query blocks, both recomputing P from the saved log-sum-exp; nothing of size
// Lq x Lkv and no buffer beyond the gradients (the plan is the tensors and the log-sum-exp).

#include "kernels/cuda/cuda_backend_base.h"

namespace attnscope::cuda {

class CudaFlashBackend final : public CudaBackendBase {
 public:
  std::string id() const override { return "cuda.flash"; }
  std::string description() const override;
  MemoryPlan plan(const WorkloadSpec& spec) const override;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) override;

 protected:
  std::vector<std::string> backendProblems(const WorkloadSpec& spec, const DeviceCaps& caps) const override {
    return flashDeviceProblems(spec, caps);
  }
  std::vector<std::string> specProblems(const WorkloadSpec& spec) const override {
    if (auto p = flashHeadDimProblem(spec.headDim())) return {*p};
    return {};
  }
};

}  // namespace attnscope::cuda
