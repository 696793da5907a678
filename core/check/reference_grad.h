#pragma once
// The float64 reference for the train pass of kind = attention, and its accuracy check.
//
// Loss = sum(O * G), so dO = G and, per (batch, head), with P = softmax(scale * Q K^T) over the
// visible keys:  dP = G V^T,  delta_i = sum_j P_ij dP_ij,  dS = P * (dP - delta),
// dQ = scale * dS K,  dK = scale * dS^T Q,  dV = P^T G;  dK and dV of a GQA group are summed over
// its query heads. Written from these formulas with referenceAttends (core/check/reference.h), not
// shared with any backend.

#include <atomic>
#include <cstdint>
#include <string>

#include "core/backend/backend.h"
#include "core/check/check_policy.h"
#include "core/inputs/host_inputs.h"
#include "core/check/accuracy.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// Bytes a train pass holds beside Q, K, V, O and the mask: G, dQ, dK, dV in the spec's dtype
// (0 for a forward pass).
int64_t trainIoBytes(const WorkloadSpec& spec);

// Checks dQ, dK and dV against the float64 reference. Each tensor's error is its max abs error
// divided by max(1, its largest reference magnitude) (gradients are sums over a sequence and
// may exceed 1, where a fixed absolute bound would be unfair to the low-precision types), held
// against toleranceFor(dtype). dQ on accuracyRows(spec, inputs, depth, kAccuracyBudget / 3, &G)
// (every row, or a sample with every batch-head, query block and mask edge, the largest |q| and
// |G| rows and the rows at risk). dK and dV, per (batch, KV head): each checked KV head costs a
// float64 forward over its group, so with depth every_row, or while every head fits
// kAccuracyBudget, every head and every key row; else the first and last heads, those holding
// the largest |q|, |G|, |k| and |v| rows or a row or key at risk, and seeded ones within the
// budget, and on each a key of every block of kCheckBlock keys, the mask's key edges, the
// largest |k| and |v| keys, the keys at risk and seeded ones.
// The result's max_abs_error is the largest of the three; a NaN or Inf fails it. `problem`
// (when given) names the first tensor and element that failed. Throws Cancelled on cancel.
Accuracy checkGradients(const WorkloadSpec& spec, const HostInputs& inputs, const AttentionGradients& grads,
                        const std::atomic<bool>* cancel = nullptr, std::string* problem = nullptr,
                        CheckDepth depth = CheckDepth::sampled);

}  // namespace attnscope
