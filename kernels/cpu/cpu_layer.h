#pragma once
// kind = layer on the CPU backends: a multi-head attention layer on x [B, L, E] around the
// backend's own attention (its AttentionCore, unchanged: cpu.reference materialises S and P,
// cpu.flash runs its tiles and FA2 backward).
//
//   qkv_proj            q, k, v = split(x w_qkv^T + b_qkv)      (written straight into heads)
//   <attention>         o = attention(q, k, v)                  (the core's steps)
//   out_proj            y = merge(o) w_o^T + b_o                (heads merged as they are read)
// pass = train, loss = sum(y * G):
//   out_proj_backward   dO = split(G w_o);  dw_o = G^T merge(o);  db_o = sum of G's rows
//   <attention backward> dq, dk, dv from dO (checkpoint = attention: the core recomputes first)
//   qkv_proj_backward   dx = [dq dk dv] w_qkv;  dw_qkv = [dq dk dv]^T x;  db_qkv = sum of their rows
//
// Every tensor is allocated at prepare and lives as long as the execution: the inputs and
// weights, y, G and the gradients, and q, k, v, o (what the backward reads: the layer keeps the
// attention's inputs and output, the core decides what else it keeps) and dO, dq, dk, dv (read
// after the run by the accuracy check, through layerIntermediates). The products' scratch lives
// for its step only (layer_products.h).

#include <memory>

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

// The plan of a layer point: "inputs", "qkv_proj", the core's forward steps, "out_proj", and for
// train "out_proj_backward", the core's backward steps, "qkv_proj_backward".
MemoryPlan planLayer(const CpuBackend& backend, const WorkloadSpec& spec);

std::unique_ptr<Execution> prepareLayer(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec,
                                        const HostInputs& inputs, RunContext& ctx);

}  // namespace attnscope::cpu
