#pragma once
// Which key tiles a block of queries visits under each mask kind, and which of those need
// element-wise masking. Shared by the flash kernel (device) and the host tests, so the tests
// check exactly the arithmetic the kernel runs. Plain integers only: no core or CUDA types.

#include <cstdint>

#if defined(__CUDACC__)
#define ATTNSCOPE_HD __host__ __device__ __forceinline__
#else
#define ATTNSCOPE_HD inline
#endif

namespace attnscope::cuda {

// Mirrors core MaskKind; kept as plain ints so kernels need no core header.
enum class TileMask : int { none = 0, causal = 1, window = 2, block = 3, dense = 4 };

ATTNSCOPE_HD int64_t clampI64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

// First visible key of query i (same rules as core visibleKeys). Monotone non-decreasing in i.
ATTNSCOPE_HD int64_t keyBegin(TileMask m, int64_t width, int64_t i, int64_t seq_q, int64_t seq_kv) {
  const int64_t off = seq_kv - seq_q;
  switch (m) {
    case TileMask::window: return clampI64(i + off - width + 1, 0, seq_kv);
    case TileMask::block: return (i / width) * width < seq_kv ? (i / width) * width : seq_kv;
    default: return 0;
  }
}

// One past the last visible key of query i. Monotone non-decreasing in i.
ATTNSCOPE_HD int64_t keyEnd(TileMask m, int64_t width, int64_t i, int64_t seq_q, int64_t seq_kv) {
  const int64_t off = seq_kv - seq_q;
  switch (m) {
    case TileMask::causal:
    case TileMask::window: return clampI64(i + off + 1, 0, seq_kv);
    case TileMask::block: return (i / width + 1) * width < seq_kv ? (i / width + 1) * width : seq_kv;
    default: return seq_kv;
  }
}

// Whether query i may see key j under the structured part of the mask (dense: every in-range key).
ATTNSCOPE_HD bool keyVisible(TileMask m, int64_t width, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv) {
  return j >= keyBegin(m, width, i, seq_q, seq_kv) && j < keyEnd(m, width, i, seq_q, seq_kv);
}

// Key tiles [first, last) of size block_n that queries [m0, m1) visit. Because both ends of every
// query's range grow with i, the union over the block is [begin(m0), end(m1 - 1)): tiles wholly
// outside it are never loaded. first >= last: the block sees no key (its rows output zeros).
struct KeyTileSpan {
  int64_t first = 0;
  int64_t last = 0;
};

ATTNSCOPE_HD KeyTileSpan keyTileSpan(TileMask m, int64_t width, int64_t m0, int64_t m1, int64_t seq_q,
                                     int64_t seq_kv, int64_t block_n) {
  const int64_t lo = keyBegin(m, width, m0, seq_q, seq_kv);
  const int64_t hi = keyEnd(m, width, m1 - 1, seq_q, seq_kv);
  KeyTileSpan s;
  if (hi <= lo) return s;
  s.first = lo / block_n;
  s.last = (hi + block_n - 1) / block_n;
  return s;
}

// Whether the tile of keys [n0, n0 + block_n) needs per-element masking for queries [m0, m1):
// true unless every key of the tile is in range and visible to every query of the block (the
// intersection [begin(m1 - 1), end(m0)) holds it). Dense masks are always applied element-wise.
ATTNSCOPE_HD bool tileNeedsMask(TileMask m, int64_t width, int64_t m0, int64_t m1, int64_t n0, int64_t block_n,
                                int64_t seq_q, int64_t seq_kv) {
  if (m == TileMask::dense) return true;
  const int64_t n1 = n0 + block_n;
  if (n1 > seq_kv) return true;
  const int64_t common_lo = keyBegin(m, width, m1 - 1, seq_q, seq_kv);
  const int64_t common_hi = keyEnd(m, width, m0, seq_q, seq_kv);
  return !(n0 >= common_lo && n1 <= common_hi);
}

// Per-problem totals for one (batch, head): how many tiles a kernel with these tile sizes visits,
// skips and masks. Host-side, for tests and reports.
struct TileCounts {
  int64_t query_blocks = 0;
  int64_t total = 0;    // query blocks x key tiles
  int64_t visited = 0;  // tiles loaded and computed
  int64_t masked = 0;   // visited tiles that apply the mask element-wise
  int64_t skipped() const { return total - visited; }
};

TileCounts countTiles(TileMask m, int64_t width, int64_t seq_q, int64_t seq_kv, int64_t block_m, int64_t block_n);

}  // namespace attnscope::cuda
