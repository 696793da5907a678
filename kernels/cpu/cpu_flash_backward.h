#pragma once
// cpu.flash's backward for pass = train, FlashAttention-2 style: nothing of size Lq x Lkv ever
// exists. The forward saved O and the log-sum-exp per query row; the backward recomputes each
// (query tile, key tile) of P = exp(scale Q K^T - lse) from them, with dP = dO V^T and
// dS = P * (dP - delta), delta_i = dO_i . O_i (recomputed per query tile from O and dO, which
// costs 1 / key-tile of the tile's products and saves the [B, H, Lq] buffer).
//
// dQ accumulation: a separate pass. Pass 1 runs one task per (batch, KV head, key tile) and
// walks every query tile of every query head of the group, accumulating that key tile's dK and
// dV in the worker's tiles (GQA's sum over the group falls out, no atomics). Pass 2 runs one task
// per (batch, head, query tile) and walks the key tiles, accumulating dQ in the worker's tiles.
// FA2 on a GPU accumulates dQ with atomic adds inside pass 1; on a CPU with a handful of threads
// that would need either locks per dQ tile or a private fp32 dQ per worker ([B, H, Lq, D] each),
// and would make the sums depend on thread timing. The price of the second pass is recomputing
// S and dP once more (7 tile products per pair instead of 5).

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

// Steps the backward adds to the plan: "backward dK dV", "backward dQ".
inline constexpr int kFlashBackwardSteps = 2;
// Rows of a query tile and of a key tile in the backward.
inline constexpr int64_t kBackwardQueryTile = 64;
inline constexpr int64_t kBackwardKeyTile = 128;

// Appends the backward's steps and its per-worker tiles to `plan`.
void planFlashBackward(MemoryPlan& plan, const WorkloadSpec& spec, int threads);

// Writes t.dq, t.dk, t.dv from t.q, t.k, t.v, t.mask, t.o, t.g and the forward's lse
// ([B, H, Lq] fp32, natural log, -inf for a row with no visible key).
void flashBackward(const WorkloadSpec& spec, RunTensors& t, const float* lse, RunContext& ctx, TaskPool& pool);

}  // namespace attnscope::cpu
