#pragma once
// cpu.flash's backward for pass = train, FlashAttention-2 style: nothing of size Lq x Lkv ever
// exists. The forward saved O and the log-sum-exp per query row; the backward recomputes each
// (query tile, key tile) of P = exp(scale Q K^T - lse) from them, with dP = dO V^T and
// dS = P * (dP - delta), delta_i = dO_i . O_i (computed once per head, Lq floats per worker).
//
// One pass: a task per (batch, query head) walks the head's (key tile, query tile) pairs, key
// tiles outside, with five tile products per pair: S = Q K^T and dP = dO V^T (then P and dS),
// dV += P^T dO, dK += dS^T Q, dQ += dS K. The head's query side (delta, lse, Q and dO as the
// products read them: in place where they are fp32 rows of whole kernel strips, else converted and
// packed per query tile) is made once per task, and each key tile's K^T, V^T and K are packed once
// for all of its query tiles. The task owns its head's dQ rows (the fp32 tensor itself, else an
// fp32 buffer per worker rounded at the task's end) and its head's dK and dV rows: in place for
// fp32 without GQA, else in fp32 buffers per query head ([B, H, Lkv, D] each, as torch's CPU
// backward expands K and V's gradients), which a second step ("backward dK dV sum") sums over each
// group's heads in head order and rounds to the dtype. No atomics, no locks, and every sum in one
// fixed order, so the result does not depend on the threads. bf16 on a variant with bf16 products
// (avx512_bf16, amx_bf16) runs the five products on bf16 pairs with fp32 accumulation, Q, K, V and
// dO as stored and P and dS rounded to bf16 where a product reads them (as torch's CPU flash
// backward does); every other case runs them in fp32. (Until 2026-12 a two-pass backward, dK dV
// per key tile then dQ per query tile, recomputed S and dP in the second pass: 7 products per
// pair; then, until 2026-12-07, query tiles outside, which packed K^T, V^T and K once per pair;
// docs/PERFORMANCE.md has all three.) The price: the per-head fp32 buffers where they are needed,
// the per-worker query rows (O(Lq x D) for bf16 and fp16, O(Lq) for fp32 of whole strips), and
// B x H tasks (fewer than the threads when B x H is small).

#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

// Steps the backward adds to the plan: "backward", and "backward dK dV sum" where dK and dV are summed
// from per-head fp32 buffers (every dtype but fp32 without GQA).
// Rows of a query tile and of a key tile in the backward.
inline constexpr int64_t kBackwardQueryTile = 64;
inline constexpr int64_t kBackwardKeyTile = 128;

// Appends the backward's steps and its per-worker tiles to `plan`.
void planFlashBackward(MemoryPlan& plan, const WorkloadSpec& spec, int threads);

// Writes t.dq, t.dk, t.dv from t.q, t.k, t.v, t.mask, t.o, t.g and the forward's lse
// ([B, H, Lq] fp32, natural log, -inf for a row with no visible key).
void flashBackward(const WorkloadSpec& spec, RunTensors& t, const float* lse, RunContext& ctx, TaskPool& pool);

}  // namespace attnscope::cpu
