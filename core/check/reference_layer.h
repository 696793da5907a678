#pragma once
// The float64 check of a kind = layer run, stage by stage: each stage's output is held against
// a float64 computation from that stage's actual inputs as the execution stored them
// (LayerIntermediates, core/inputs/host_inputs.h), so the check costs a few float64 matrix rows per stage
// instead of a float64 layer (which at E = 1024, L = 4096 would take minutes):
//
//   q, k, v   = x w_qkv^T + b_qkv           sampled positions (b, l), every column
//   o         = attention(q, k, v)          checkAccuracy (core/check/reference.h) on the stored q, k, v
//   y         = merge(o) w_o^T + b_o        sampled positions
// pass = train (loss = sum(y * G)):
//   dO        = split(G w_o)                sampled positions
//   dw_o      = G^T merge(o)                sampled rows;  db_o = column sums of G, every element
//   dq, dk, dv from dO                      checkGradients (core/check/reference_grad.h)
//   dw_qkv    = [dq dk dv]^T x              sampled rows;  db_qkv, every element
//   dx        = [dq dk dv] w_qkv            sampled positions
//
// Every stage is checked, so a wrong stage fails whatever the others did; each stage holds every
// row with depth every_row, or while the stage's rows fit kAccuracyBudget products and
// kAccuracyAllRows rows (as for the attention's output); else a sampled stage takes a position
// of every block of kCheckBlock positions of every batch (for w_qkv's gradient a row of every
// head's slice), the positions (weight rows) whose input row (column) is largest, and up to
// kAccuracySamples seeded ones, first and last included. Each tensor's error is its max abs
// error over max(1, its largest reference
// magnitude), held against toleranceFor(dtype) (as checkGradients does). Written from the
// formulas, sharing nothing with the backends.

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/check/check_policy.h"
#include "core/inputs/host_inputs.h"
#include "core/check/accuracy.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// Bytes of a layer's inputs and outputs: x, w_qkv, b_qkv, w_o, b_o, y and the dense mask; for
// pass = train also G, dx, dw_qkv, db_qkv, dw_o, db_o; a stack's weights and their gradients for
// every layer.
int64_t layerIoBytes(const WorkloadSpec& spec);

// Floating-point operations of a layer's two projections in the forward (2 per multiply-add), of
// every layer of a stack.
double layerProjectionFlops(const WorkloadSpec& spec);

// Checks y (float, [B, L, E]) and, for pass = train, the gradients. `mid` null: the check fails
// saying the execution gave no intermediates. The result's max_abs_error is the largest stage
// error; `problem` (when given) names the first failing tensor and its worst element. Throws
// Cancelled (core/base/cancel.h) when `cancel` is set.
Accuracy checkLayer(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<float>& y,
                    const LayerGradients* grads, const LayerIntermediates* mid,
                    const std::atomic<bool>* cancel = nullptr, std::string* problem = nullptr,
                    CheckDepth depth = CheckDepth::sampled);

// The check of a kind = layer run with its stack: each layer is held, as checkLayer holds one,
// against its own inputs as the execution stored them: layer l's x is layer l - 1's output
// (mid[l].x), its y layer l + 1's input (the run's y for the last), its G the gradient of layer
// l + 1's input (grads[l + 1].dx; the run's G for the last). A wrong value in one layer fails,
// named "layer <n>: ...", whatever the others did. The result is the worst layer's; rows_checked
// and rows_total add up. layers = 1 is checkLayer.
Accuracy checkStack(const WorkloadSpec& spec, const HostInputs& inputs, const std::vector<float>& y,
                    const std::vector<LayerGradients>* grads, const std::vector<LayerIntermediates>* mid,
                    const std::atomic<bool>* cancel = nullptr, std::string* problem = nullptr,
                    CheckDepth depth = CheckDepth::sampled);

}  // namespace attnscope
