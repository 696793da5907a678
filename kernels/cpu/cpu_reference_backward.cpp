#include "kernels/cpu/cpu_reference_backward.h"

#include <algorithm>
#include <string>
#include <vector>

#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/row_blocks.h"
#include "kernels/cpu/tile_kernels.h"
#include "kernels/cpu/transpose.h"

namespace attnscope::cpu {
namespace {

using Blocks = RowBlocks;

Blocks queryBlocks(const WorkloadSpec& s, int threads) {
  return Blocks::of(s.batch * s.heads, s.seq_q, s.seqKv(), s.headDim(), threads);
}
Blocks keyBlocks(const WorkloadSpec& s, int threads) {
  return Blocks::of(s.batch * s.kvHeads(), s.seqKv(), s.seq_q, s.headDim(), threads);
}

// Per-worker scratch, allocated on the calling thread for every worker up front so the peak does
// not depend on which threads picked up tasks.
std::vector<Buffer<float>> scratch(TrackingAllocator& alloc, int workers, int64_t floats, const std::string& what) {
  std::vector<Buffer<float>> b;
  b.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) b.emplace_back(alloc, floats, what + " (worker " + std::to_string(w) + ")");
  return b;
}

struct Sizes {
  int64_t v_packed, g_rows, k_packed, dq_rows, block, qg_packed, kv_rows;
  static Sizes of(const WorkloadSpec& s, const TileKernels& kn, const Blocks& q, const Blocks& k) {
    const int64_t Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
    return {kn.packedFloats(D, Lkv), q.rows * D + D, kn.packedFloats(Lkv, D), q.rows * D,
            k.rows * Lq,             kn.packedFloats(Lq, D), 2 * k.rows * D};
  }
};

}  // namespace

void planReferenceBackward(MemoryPlan& p, const WorkloadSpec& s, int threads) {
  const int ds_step = p.addStep("backward dS");
  const int dq_step = p.addStep("backward dQ");
  const int kv_step = p.addStep("backward dK dV");
  const Blocks qb = queryBlocks(s, threads), kb = keyBlocks(s, threads);
  const Sizes z = Sizes::of(s, activeTileKernels(), qb, kb);
  p.add("dS = P * (dP - delta)", s.scoreElements() * 4, ds_step, kv_step, BufferRole::workspace);
  for (int w = 0; w < qb.workers; ++w) {
    const std::string worker = " (worker " + std::to_string(w) + ")";
    p.add("V^T packed" + worker, z.v_packed * 4, ds_step, ds_step, BufferRole::workspace);
    p.add("dO rows" + worker, z.g_rows * 4, ds_step, ds_step, BufferRole::workspace);
    p.add("K packed" + worker, z.k_packed * 4, dq_step, dq_step, BufferRole::workspace);
    p.add("dQ rows" + worker, z.dq_rows * 4, dq_step, dq_step, BufferRole::workspace);
  }
  for (int w = 0; w < kb.workers; ++w) {
    const std::string worker = " (worker " + std::to_string(w) + ")";
    p.add("dS^T, P^T block" + worker, z.block * 4, kv_step, kv_step, BufferRole::workspace);
    p.add("Q, dO packed" + worker, z.qg_packed * 4, kv_step, kv_step, BufferRole::workspace);
    p.add("dK dV rows" + worker, z.kv_rows * 4, kv_step, kv_step, BufferRole::workspace);
  }
}

void referenceBackward(const WorkloadSpec& s, RunTensors& t, Buffer<float>& probs, RunContext& ctx, TaskPool& pool) {
  TrackingAllocator& alloc = ctx.allocator();
  const TileKernels& kn = activeTileKernels();
  const int64_t H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const int64_t group = H / Hkv, elem = bytesPerElement(s.dtype);
  const float scale = static_cast<float>(s.effectiveScale());
  const Blocks qb = queryBlocks(s, pool.threads()), kb = keyBlocks(s, pool.threads());
  const Sizes z = Sizes::of(s, kn, qb, kb);
  const float* P = probs.data();
  // Element index of row 0 of query head bh, and of the KV head it reads.
  auto qRow0 = [&](int64_t bh) { return bh * Lq * D; };
  auto kvRow0 = [&](int64_t bh) { return ((bh / H) * Hkv + (bh % H) / group) * Lkv * D; };

  Buffer<float> dS(alloc, s.scoreElements(), "dS = P * (dP - delta)");
  {
    PhaseScope phase(ctx, "backward dS");
    auto vt = scratch(alloc, qb.workers, z.v_packed, "V^T packed");
    auto rows = scratch(alloc, qb.workers, z.g_rows, "dO rows");
    pool.run(qb.tasks, qb.workers,
             [&](int w, int64_t task) {
               const int64_t bh = task / qb.per_head, i0 = task % qb.per_head * qb.rows;
               const int64_t n = std::min(qb.rows, Lq - i0);
               float* g = rows[w].data();
               float* o = g + qb.rows * D;
               kn.pack_b(s.dtype, t.v.data() + kvRow0(bh) * elem, D, true, D, Lkv, vt[w].data());
               toFloat(s.dtype, t.g.data(), qRow0(bh) + i0 * D, n * D, g);
               float* ds = dS.data() + (bh * Lq + i0) * Lkv;
               kn.gemmPacked(n, Lkv, D, 1.0f, g, D, vt[w].data(), 0.0f, ds, Lkv);
               for (int64_t r = 0; r < n; ++r) {
                 toFloat(s.dtype, t.o.data(), qRow0(bh) + (i0 + r) * D, D, o);
                 float delta = 0.0f;
                 for (int64_t d = 0; d < D; ++d) delta += g[r * D + d] * o[d];
                 const float* prow = P + (bh * Lq + i0 + r) * Lkv;
                 float* row = ds + r * Lkv;
                 for (int64_t j = 0; j < Lkv; ++j) row[j] = prow[j] * (row[j] - delta);
               }
             },
             &ctx);
  }
  {
    PhaseScope phase(ctx, "backward dQ");
    auto kp = scratch(alloc, qb.workers, z.k_packed, "K packed");
    auto rows = scratch(alloc, qb.workers, z.dq_rows, "dQ rows");
    pool.run(qb.tasks, qb.workers,
             [&](int w, int64_t task) {
               const int64_t bh = task / qb.per_head, i0 = task % qb.per_head * qb.rows;
               const int64_t n = std::min(qb.rows, Lq - i0);
               kn.pack_b(s.dtype, t.k.data() + kvRow0(bh) * elem, D, false, Lkv, D, kp[w].data());
               kn.gemmPacked(n, D, Lkv, scale, dS.data() + (bh * Lq + i0) * Lkv, Lkv, kp[w].data(), 0.0f,
                             rows[w].data(), D);
               fromFloat(s.dtype, rows[w].data(), n * D, t.dq.data(), qRow0(bh) + i0 * D);
             },
             &ctx);
  }
  {
    PhaseScope phase(ctx, "backward dK dV");
    auto block = scratch(alloc, kb.workers, z.block, "dS^T, P^T block");
    auto packed = scratch(alloc, kb.workers, z.qg_packed, "Q, dO packed");
    auto rows = scratch(alloc, kb.workers, z.kv_rows, "dK dV rows");
    pool.run(kb.tasks, kb.workers,
             [&](int w, int64_t task) {
               const int64_t bkv = task / kb.per_head, j0 = task % kb.per_head * kb.rows;
               const int64_t n = std::min(kb.rows, Lkv - j0);
               const int64_t b = bkv / Hkv, kvh = bkv % Hkv;
               float* T = block[w].data();
               float* dk = rows[w].data();
               float* dv = dk + kb.rows * D;
               // Columns j0..j0+n of one head's [Lq, Lkv] tensor as n rows of Lq.
               auto transpose = [&](const float* m) { transposeBlocked(m + j0, Lq, n, Lkv, T, Lq); };
               for (int64_t g = 0; g < group; ++g) {
                 const int64_t bh = b * H + kvh * group + g;
                 const float beta = g == 0 ? 0.0f : 1.0f;
                 transpose(dS.data() + bh * Lq * Lkv);
                 kn.pack_b(s.dtype, t.q.data() + qRow0(bh) * elem, D, false, Lq, D, packed[w].data());
                 kn.gemmPacked(n, D, Lq, scale, T, Lq, packed[w].data(), beta, dk, D);
                 transpose(P + bh * Lq * Lkv);
                 kn.pack_b(s.dtype, t.g.data() + qRow0(bh) * elem, D, false, Lq, D, packed[w].data());
                 kn.gemmPacked(n, D, Lq, 1.0f, T, Lq, packed[w].data(), beta, dv, D);
               }
               const int64_t first = (bkv * Lkv + j0) * D;
               fromFloat(s.dtype, dk, n * D, t.dk.data(), first);
               fromFloat(s.dtype, dv, n * D, t.dv.data(), first);
             },
             &ctx);
  }
  dS.reset();
  probs.reset();
}

}  // namespace attnscope::cpu
