#pragma once
// Forward memory of one SDPA call per kernel and torch version, as a MemoryPlan of named buffers
// (inputs, converted mask, temporaries, scores, softmax output, workspaces, output, logsumexp)
// over the steps of the composite and kernel code. Formulas: shared/reference/torch-sdpa.md §4,
// with the CPU allocation sequences checked against the profiler traces of the real 2.15 wheel.
// The plan includes the caller's inputs (q, k, v and the bool mask); what the call itself adds is
// peakBytes() - inputBytes().

#include <string>
#include <vector>

#include "core/backend/memory_plan.h"
#include "core/torch_dispatch/sdpa_call.h"
#include "core/torch_dispatch/sdpa_rules.h"

namespace attnscope::torch_dispatch {

struct SdpaMemory {
  MemoryPlan plan;
  int64_t input_bytes = 0;          // q, k, v and the user's bool mask: allocated before the call
  std::vector<std::string> notes;   // what is not modelled or uncertain
  // Training (the target's requires_grad): the plan goes on past the forward. Its first
  // forward_steps steps are the forward; the next one holds grad_output, made by the caller; the
  // backward's steps follow. 0: the plan is the forward alone.
  int forward_steps = 0;
  int64_t peakBytes() const { return plan.peakBytes(); }  // the whole plan: forward, and backward when training
  int64_t extraBytes() const { return plan.peakBytes() - input_bytes; }  // what the call adds at its peak
  bool hasBackward() const { return forward_steps > 0; }
  int64_t forwardPeakBytes() const;
  int64_t forwardExtraBytes() const { return forwardPeakBytes() - input_bytes; }
  // Allocated beyond the inputs when the forward returns: its output and what autograd saved.
  int64_t keptBytes() const;
  // The backward's peak beyond what was allocated when it started (inputs, kept, grad_output).
  int64_t backwardExtraBytes() const;
};

// How a causal_lower_right bias reaches the kernel (torch/nn/attention/bias.py, CausalBias._dispatch):
// straight to the flash or efficient kernel when their checks pass for a mask-less call, else the
// bias materialises a bool [Lq, Lkv] mask inside the call and SDPA dispatches on it.
enum class LowerRightPath { not_used, flash_kernel, efficient_kernel, materialised };

SdpaMemory sdpaMemory(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& target,
                      LowerRightPath lower_right = LowerRightPath::not_used);

// The CPU flash kernel's per-thread split sizes (flash_attention_kernel_impl).
int64_t cpuFlashQSplit(int64_t seq_q);
int64_t cpuFlashKvSplit(int64_t seq_kv);
// cuBLAS's workspace on the first GEMM of a stream (CUBLAS_WORKSPACE_CONFIG default).
int64_t cublasWorkspaceBytes(const TorchTarget& target);

}  // namespace attnscope::torch_dispatch
