#pragma once
// The body of cuda.math's softmax-backward kernel (math_kernels.cu), written once for the device
// and for the host test that runs it one thread per block (test_cuda_backward_serial.cpp; the
// Block and Elem contracts are flash_bwd_body.h's, plus Block::sum, a block-wide sum).
//
// One block per row (query i of head h in batch b), in place: ds holds dP on entry and
// dS = P * (dP - delta) on return, delta = dO_i . O_i reduced over D first. P is zero where a key
// is masked, so dS is too.

#include <cstdint>

#include "kernels/cuda/flash_params.h"

#ifdef __CUDACC__
#define ATTNSCOPE_SOFTMAX_BWD_BODY __device__
#else
#define ATTNSCOPE_SOFTMAX_BWD_BODY inline
#endif

namespace attnscope::cuda::softmaxbwd {

template <typename Elem, typename Block>
ATTNSCOPE_SOFTMAX_BWD_BODY void row(const Block& blk, const SoftmaxBackwardParams& p, int64_t i, int64_t h,
                                    int64_t b) {
  using S = typename Elem::Storage;
  const int64_t r = (b * p.heads + h) * p.seq_q + i;
  const S* o = static_cast<const S*>(p.o) + r * p.head_dim;
  const S* g = static_cast<const S*>(p.g) + r * p.head_dim;
  const S* probs = static_cast<const S*>(p.probs) + r * p.seq_kv;
  S* ds = static_cast<S*>(p.ds) + r * p.seq_kv;

  float part = 0.f;
  for (int64_t d = blk.tid(); d < p.head_dim; d += blk.threads()) part += Elem::load(o, d) * Elem::load(g, d);
  const float delta = blk.sum(part);
  for (int64_t j = blk.tid(); j < p.seq_kv; j += blk.threads())
    Elem::store(ds, j, Elem::load(probs, j) * (Elem::load(ds, j) - delta));
}

}  // namespace attnscope::cuda::softmaxbwd
