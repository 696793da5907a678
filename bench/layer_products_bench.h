#pragma once
// bench_cpu --products: the six matrix products of a kind = layer train pass, each timed alone on
// the layer's own shapes and layouts (kernels/cpu/layer_products.h: q, k, v, o and dq, dk, dv as
// heads), beside torch's product for the same shape on contiguous rows (F.linear, a @ w,
// g.t() @ x: what autograd runs for nn.Linear), in paired rounds. The fp32 layer's ratio to
// torch is bounded by these, so docs/PERFORMANCE.md records them per machine.

#include <functional>
#include <vector>

#include "bench/torch_peer.h"
#include "core/spec/dtype.h"
#include "kernels/cpu/task_pool.h"

namespace attnscope::bench {

struct ProductsOptions {
  std::vector<int64_t> seqs, head_dims;
  std::vector<DType> dtypes;
  int64_t heads = 8;
  int reps = 3, rounds = 3;
};

// Prints one table: dtype, D, rows, product, shape, ours and torch's time and rate, the ratio
// (median of the rounds' ratios) and our share of the dtype's peak (peak_for(dtype), 0: "-").
void benchLayerProducts(const ProductsOptions& o, cpu::TaskPool& pool, TorchPeer* peer,
                        const std::function<double(DType)>& peak_for);

}  // namespace attnscope::bench
