#pragma once
// cuda.math and cuda.chunked: the materialising path as frameworks run it. S = scale * Q K^T
// through cuBLAS strided-batched GEMMs, the mask applied (a dense boolean mask converted to an
// additive mask in the input type), a softmax kernel writing P, then O = P V. S and P are real
// device buffers: for cuda.math [B, H, Lq, Lkv]; for cuda.chunked one chunk of query rows at a
// time, so memory grows with chunk x Lkv instead of Lq x Lkv.
// pass = train (cuda.math only): the forward keeps P; the backward computes dP = dO V^T into the
// dS tensor, turns it into dS = P * (dP - delta) in place (a kernel), then dQ = scale dS K,
// dK = scale dS^T Q and dV = P^T dO through cuBLAS, GQA's sum over the group folded into the GEMM.
// checkpoint = attention frees P after the forward and runs the forward again before the backward.

#include <cublas_v2.h>

#include <mutex>

#include "kernels/cuda/cuda_backend_base.h"
#include "kernels/cuda/cuda_plans.h"

namespace attnscope::cuda {

class CudaMathBackend final : public CudaBackendBase {
 public:
  // chunked == false: cuda.math (one chunk holding every query). For cuda.chunked, chunk_rows > 0
  // fixes the rows per chunk; 0 picks them from chunk_score_budget (see chooseChunkRows).
  explicit CudaMathBackend(bool chunked, int64_t chunk_rows = 0,
                           int64_t chunk_score_budget = kDefaultChunkScoreBudget);
  ~CudaMathBackend() override;

  std::string id() const override { return chunked_ ? "cuda.chunked" : "cuda.math"; }
  std::string description() const override;
  MemoryPlan plan(const WorkloadSpec& spec) const override;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) override;

  int64_t chunkRows(const WorkloadSpec& spec) const;

 protected:
  std::vector<std::string> backendProblems(const WorkloadSpec& spec, const DeviceCaps&) const override {
    return specProblems(spec);
  }
  // cuBLAS's 32-bit dimensions; cuda.chunked refuses pass train.
  std::vector<std::string> specProblems(const WorkloadSpec& spec) const override;

 private:
  // One handle for the backend's lifetime: cublasCreate is slow, and the pool it sets up
  // internally then stays outside every run. Runs hand it their own tracked workspace.
  cublasHandle_t handle();

  bool chunked_;
  int64_t chunk_rows_;
  int64_t chunk_budget_;
  std::mutex mu_;
  cublasHandle_t handle_ = nullptr;
};

}  // namespace attnscope::cuda
