#pragma once
// Memory plans of the CUDA backends and the sizes their executions allocate. Both come from the
// same functions, so the plan is the allocation list by construction and measured peak == plan
// for cuda.math and cuda.chunked (the GPU tests hold them to it). Pure host logic.

#include <cstdint>

#include "core/backend/memory_plan.h"
#include "core/spec/workload_spec.h"

namespace attnscope::cuda {

// cuBLAS gets this workspace from our allocator (cublasSetWorkspace), so its bytes are tracked
// and planned. 32 MiB is cuBLAS 12's default pool size on Hopper, enough for every algorithm.
inline constexpr int64_t kCublasWorkspaceBytes = int64_t{32} << 20;
// cuda.chunked's default: the largest chunk whose scores fit in this many bytes.
inline constexpr int64_t kDefaultChunkScoreBudget = int64_t{256} << 20;

// Query rows per chunk. requested_rows > 0 is taken as given (capped at seq_q). Otherwise the
// fewest chunks whose scores (B x H x rows x Lkv elements) fit in score_budget_bytes, balanced
// so every chunk has the same rows give or take one (1025 rows under a 1024-row budget are two
// chunks of 513, not 1024 + 1). Always at least 1 row.
int64_t chooseChunkRows(const WorkloadSpec& spec, int64_t requested_rows, int64_t score_budget_bytes);

// Bytes of each buffer a materialising run (cuda.math: chunk_rows == seq_q) allocates.
struct MaterialisingSizes {
  int64_t q = 0, k = 0, v = 0, o = 0;
  int64_t mask = 0;       // the boolean mask as given (dense only)
  int64_t bias = 0;       // the additive mask in the input type, for one chunk (dense only)
  int64_t scores = 0;     // S for one chunk, input type
  int64_t probs = 0;      // P for one chunk, input type
  int64_t workspace = kCublasWorkspaceBytes;
  int64_t chunk_rows = 0;
  int64_t chunks = 0;
};
MaterialisingSizes materialisingSizes(const WorkloadSpec& spec, int64_t chunk_rows);

struct FlashSizes {
  int64_t q = 0, k = 0, v = 0, o = 0;
  int64_t mask = 0;
  int64_t lse = 0;  // float per (b, h, query)
};
FlashSizes flashSizes(const WorkloadSpec& spec);

// pass = train: dO (g) and the gradients dq, dk, dv, in the input type, and (cuda.math) dS, a
// [B, H, Lq, Lkv] tensor in the input type that first holds dP.
struct TrainSizes {
  int64_t g = 0, dq = 0, dk = 0, dv = 0;
  int64_t ds = 0;
};
TrainSizes trainSizes(const WorkloadSpec& spec);
inline constexpr const char* kDsBufferName = "dS = P * (dP - delta)";

// Steps: inputs, scores, softmax, output. chunk_rows == seq_q gives cuda.math's plan.
MemoryPlan planMaterialising(const WorkloadSpec& spec, int64_t chunk_rows);
// Steps: inputs, attention.
MemoryPlan planFlash(const WorkloadSpec& spec);

// cuda.math, pass = train (one chunk of every query). Steps: inputs, scores, softmax, output,
// with checkpoint = attention the same three prefixed "recompute ", then backward dS, backward dQ,
// backward dK dV. The forward frees S and the additive mask and keeps P for the backward (with
// checkpointing it frees P too and the recompute allocates all three again).
MemoryPlan planMathTrain(const WorkloadSpec& spec);
// cuda.flash, pass = train. Steps: inputs, attention, (recompute attention), backward dK dV,
// backward dQ. Nothing beyond the tensors and the log-sum-exp: the kernels work in shared memory.
MemoryPlan planFlashTrain(const WorkloadSpec& spec);

}  // namespace attnscope::cuda
