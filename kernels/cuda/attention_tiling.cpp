#include "kernels/cuda/attention_tiling.h"

namespace attnscope::cuda {

TileCounts countTiles(TileMask m, int64_t width, int64_t seq_q, int64_t seq_kv, int64_t block_m, int64_t block_n) {
  TileCounts c;
  c.query_blocks = (seq_q + block_m - 1) / block_m;
  const int64_t key_tiles = (seq_kv + block_n - 1) / block_n;
  c.total = c.query_blocks * key_tiles;
  for (int64_t qb = 0; qb < c.query_blocks; ++qb) {
    const int64_t m0 = qb * block_m;
    const int64_t m1 = m0 + block_m < seq_q ? m0 + block_m : seq_q;
    const KeyTileSpan span = keyTileSpan(m, width, m0, m1, seq_q, seq_kv, block_n);
    for (int64_t t = span.first; t < span.last; ++t) {
      ++c.visited;
      if (tileNeedsMask(m, width, m0, m1, t * block_n, block_n, seq_q, seq_kv)) ++c.masked;
    }
  }
  return c;
}

}  // namespace attnscope::cuda
