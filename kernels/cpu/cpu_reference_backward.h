#pragma once
// cpu.reference's backward for pass = train, the way a framework's math path differentiates
// attention: every [B, H, Lq, Lkv] intermediate is a whole fp32 tensor. From the saved P:
//   dS = P * (dP - delta) with dP = dO V^T and delta_i = dO_i . O_i   (one materialised tensor,
//        dP written and turned into dS row by row in place)
//   dQ = scale * dS K,  dK = scale * dS^T Q,  dV = P^T dO  (GQA: dK, dV summed over the group)
// The products are the tile kernels' (pack_b + gemm), as in the forward.

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

// Steps the backward adds to the plan: "backward dS", "backward dQ", "backward dK dV".
inline constexpr int kReferenceBackwardSteps = 3;

// Appends the backward's steps and buffers (dS and the per-worker scratch) to `plan`.
void planReferenceBackward(MemoryPlan& plan, const WorkloadSpec& spec, int threads);

// Writes t.dq, t.dk, t.dv from t.q, t.k, t.v, t.mask, t.o, t.g and the forward's P, then frees P.
void referenceBackward(const WorkloadSpec& spec, RunTensors& t, Buffer<float>& probs, RunContext& ctx, TaskPool& pool);

}  // namespace attnscope::cpu
