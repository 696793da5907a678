#pragma once
// cuda.flash's backward (FlashAttention-2 algorithm, flash_bwd.cu): its tile sizes, the layout of
// its shared memory, its grids and which query blocks a key tile meets, written down once.
// The kernels and the launcher use these, and the host tests check them without a GPU. Plain
// constexpr integer arithmetic, callable from host and device code; no CUDA or core headers.
//
// Two kernels, both one thread block of kFlashBwdThreads threads per tile:
//   dK dV: grid (key tiles, KV heads, batch). The block keeps its key tile's K, V and the fp32
//          dK, dV accumulators in shared memory and walks every query block of every query head
//          of its group that sees the tile, recomputing P and dS for each (query block, key tile).
//   dQ:    grid (query blocks, heads, batch). The block keeps its query block's Q, dO and the
//          fp32 dQ accumulator and walks the key tiles its queries see (keyTileSpan).
// Both need the same buffers (the dQ kernel uses less of `acc`), so one layout serves both.

#include <cstdint>

#include "kernels/cuda/attention_tiling.h"

#ifdef __CUDACC__
#define ATTNSCOPE_BWD_HD __host__ __device__
#else
#define ATTNSCOPE_BWD_HD
#endif

namespace attnscope::cuda {

inline constexpr int kFlashBwdThreads = 256;

struct FlashBwdTile {
  int block_m = 0;  // query rows per block
  int block_n = 0;  // key rows per tile
};

// Square tiles, smaller for the widest heads so the shared memory stays under A100's 163 KiB.
ATTNSCOPE_BWD_HD constexpr FlashBwdTile flashBwdTile(int64_t head_dim) {
  return head_dim > 128 ? FlashBwdTile{16, 16} : FlashBwdTile{32, 32};
}

// Offsets (in floats) into the dynamic shared memory: every tile row holds head_dim fp32 values.
//   q, g:    the query block's Q and dO            [block_m][D]
//   k, v:    the key tile's K and V                [block_n][D]
//   p, ds:   P and dS of the (query, key) pair     [block_m][block_n]
//   delta:   dO_i . O_i per query row, lse: log-sum-exp per query row (-inf: sees no key)
//   acc:     dK then dV [block_n][D] each (dK dV kernel), or dQ [block_m][D] (dQ kernel)
struct FlashBwdLayout {
  int64_t d = 0, bm = 0, bn = 0;
  int64_t q = 0, g = 0, k = 0, v = 0, p = 0, ds = 0, delta = 0, lse = 0, acc = 0, floats = 0;
};

ATTNSCOPE_BWD_HD constexpr FlashBwdLayout flashBwdLayout(int64_t head_dim) {
  const FlashBwdTile t = flashBwdTile(head_dim);
  FlashBwdLayout l;
  l.d = head_dim;
  l.bm = t.block_m;
  l.bn = t.block_n;
  l.q = 0;
  l.g = l.q + l.bm * l.d;
  l.k = l.g + l.bm * l.d;
  l.v = l.k + l.bn * l.d;
  l.p = l.v + l.bn * l.d;
  l.ds = l.p + l.bm * l.bn;
  l.delta = l.ds + l.bm * l.bn;
  l.lse = l.delta + l.bm;
  l.acc = l.lse + l.bm;
  const int64_t acc = 2 * l.bn * l.d > l.bm * l.d ? 2 * l.bn * l.d : l.bm * l.d;
  l.floats = l.acc + acc;
  return l;
}

ATTNSCOPE_BWD_HD constexpr int64_t flashBwdSmemBytes(int64_t head_dim) { return flashBwdLayout(head_dim).floats * 4; }

struct Grid3 {
  int64_t x = 0, y = 0, z = 0;
};

ATTNSCOPE_BWD_HD constexpr Grid3 flashBwdKeyGrid(int64_t batch, int64_t kv_heads, int64_t seq_kv, int64_t head_dim) {
  const int64_t bn = flashBwdTile(head_dim).block_n;
  return Grid3{(seq_kv + bn - 1) / bn, kv_heads, batch};
}

ATTNSCOPE_BWD_HD constexpr Grid3 flashBwdQueryGrid(int64_t batch, int64_t heads, int64_t seq_q, int64_t head_dim) {
  const int64_t bm = flashBwdTile(head_dim).block_m;
  return Grid3{(seq_q + bm - 1) / bm, heads, batch};
}

// Whether some query of [m0, m1) may see some key of key tile `tile` (size block_n) under the
// structured mask: exactly the tiles keyTileSpan visits from the query side, so both kernels
// skip the same (query block, key tile) pairs and skip only pairs without a visible element.
ATTNSCOPE_BWD_HD inline bool queryBlockSeesKeyTile(TileMask m, int64_t width, int64_t m0, int64_t m1, int64_t seq_q,
                                                   int64_t seq_kv, int64_t block_n, int64_t tile) {
  const KeyTileSpan s = keyTileSpan(m, width, m0, m1, seq_q, seq_kv, block_n);
  return tile >= s.first && tile < s.last;
}

// Element offset of row `row` of head `head` in batch `batch` for a tensor with these strides.
ATTNSCOPE_BWD_HD constexpr int64_t rowOffset(int64_t batch, int64_t head, int64_t row, int64_t batch_stride,
                                            int64_t head_stride, int64_t row_stride) {
  return batch * batch_stride + head * head_stride + row * row_stride;
}

}  // namespace attnscope::cuda
