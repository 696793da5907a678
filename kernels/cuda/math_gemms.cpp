#include "kernels/cuda/math_gemms.h"

namespace attnscope::cuda {

std::vector<GemmCall> rowsByKeysCalls(const WorkloadSpec& s, int64_t q0, int64_t rows, float alpha) {
  const int64_t D = s.headDim(), Lq = s.seq_q, Lkv = s.seqKv(), group = s.heads / s.kvHeads();
  const bool whole = rows == Lq;
  std::vector<GemmCall> calls;
  for (int64_t r = 0; r < (whole ? 1 : group); ++r) {
    // Column-major C^T [Lkv, rows] = B [Lkv, D] (stored as B^T with ld D, hence op T) times
    // A^T [D, rows] (stored with ld D, op N).
    GemmCall c;
    c.trans_a = true;
    c.trans_b = false;
    c.m = Lkv;
    c.n = whole ? group * rows : rows;
    c.k = D;
    c.alpha = alpha;
    c.lda = D;
    c.stride_a = Lkv * D;
    c.b_offset = (r * Lq + q0) * D;
    c.ldb = D;
    c.stride_b = group * Lq * D;
    c.c_offset = r * rows * Lkv;
    c.ldc = Lkv;
    c.stride_c = group * rows * Lkv;
    c.batch = s.batch * s.kvHeads();
    calls.push_back(c);
  }
  return calls;
}

std::vector<GemmCall> scoresByValuesCalls(const WorkloadSpec& s, int64_t q0, int64_t rows, float alpha) {
  const int64_t D = s.headDim(), Lq = s.seq_q, Lkv = s.seqKv(), group = s.heads / s.kvHeads();
  const bool whole = rows == Lq;
  std::vector<GemmCall> calls;
  for (int64_t r = 0; r < (whole ? 1 : group); ++r) {
    // Column-major C^T [D, rows] = B^T [D, Lkv] (stored with ld D, op N) times A^T [Lkv, rows]
    // (stored with ld Lkv, op N).
    GemmCall c;
    c.m = D;
    c.n = whole ? group * rows : rows;
    c.k = Lkv;
    c.alpha = alpha;
    c.lda = D;
    c.stride_a = Lkv * D;
    c.b_offset = r * rows * Lkv;
    c.ldb = Lkv;
    c.stride_b = group * rows * Lkv;
    c.c_offset = (r * Lq + q0) * D;
    c.ldc = D;
    c.stride_c = group * Lq * D;
    c.batch = s.batch * s.kvHeads();
    calls.push_back(c);
  }
  return calls;
}

GemmCall keyRowsCall(const WorkloadSpec& s, float alpha) {
  const int64_t D = s.headDim(), Lq = s.seq_q, Lkv = s.seqKv(), group = s.heads / s.kvHeads();
  // Column-major C^T [D, Lkv] = B^T [D, group Lq] (stored with ld D, op N) times
  // A [group Lq, Lkv] (stored as A^T with ld Lkv, hence op T).
  GemmCall c;
  c.trans_a = false;
  c.trans_b = true;
  c.m = D;
  c.n = Lkv;
  c.k = group * Lq;
  c.alpha = alpha;
  c.lda = D;
  c.stride_a = group * Lq * D;
  c.ldb = Lkv;
  c.stride_b = group * Lq * Lkv;
  c.ldc = D;
  c.stride_c = Lkv * D;
  c.batch = s.batch * s.kvHeads();
  return c;
}

}  // namespace attnscope::cuda
