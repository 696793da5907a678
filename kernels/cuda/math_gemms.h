#pragma once
// The strided-batched GEMMs of cuda.math and cuda.chunked (forward and backward), as plain
// descriptions of cublasGemmStridedBatchedEx's arguments: the backend passes them to cuBLAS
// verbatim, and the host tests run them through an emulator of cuBLAS's column-major semantics
// against the float64 reference, so the operands, leading dimensions and strides are checked
// without a GPU. Pure host logic.
//
// Every tensor is row-major: Q-like [B, H, Lq, D] (Q, dO, O, dQ), K-like [B, Hkv, Lkv, D]
// (K, V, dK, dV), score-like [B, H, rows, Lkv] (one chunk of S, P, dS). A row-major matrix
// X[r, c] is the column-major X^T with leading dimension c, which is how each call is written.

#include <cstdint>
#include <vector>

#include "core/spec/workload_spec.h"

namespace attnscope::cuda {

// cublasGemmStridedBatchedEx: for each batch index t, C_t = alpha op(A_t) op(B_t) + beta C_t with
// column-major m x k op(A), k x n op(B), m x n C; X_t starts at x_offset + t * stride_x
// (elements). beta is always 0: the outputs are overwritten, never accumulated into.
struct GemmCall {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.f;
  int64_t a_offset = 0, lda = 0, stride_a = 0;
  int64_t b_offset = 0, ldb = 0, stride_b = 0;
  int64_t c_offset = 0, ldc = 0, stride_c = 0;
  int64_t batch = 0;
};

// Row-major C[rows, Lkv] = alpha * A[rows, D] B[Lkv, D]^T per head, for query rows [q0, q0 + rows):
// A Q-like, B K-like, C score-like (S = scale Q K^T; dP = dO V^T). When a chunk holds every
// query, the group's heads are one GEMM per KV head (M = group x Lq); else one call per head of
// the group. cuBLAS's A is the K-like operand, its B the Q-like one.
std::vector<GemmCall> rowsByKeysCalls(const WorkloadSpec& spec, int64_t q0, int64_t rows, float alpha);

// Row-major C[rows, D] = alpha * A[rows, Lkv] B[Lkv, D] per head: A score-like, B K-like, C Q-like
// (O = P V; dQ = scale dS K). cuBLAS's A is the K-like operand, its B the score-like one.
std::vector<GemmCall> scoresByValuesCalls(const WorkloadSpec& spec, int64_t q0, int64_t rows, float alpha);

// Row-major C[Lkv, D] = alpha * sum over the group's heads of A[Lq, Lkv]^T B[Lq, D]: A score-like
// (every query), B Q-like, C K-like (dK = scale dS^T Q; dV = P^T dO). The group's heads are
// contiguous rows of A and B, so the sum is the GEMM's own: K = group x Lq, one call per KV head.
// cuBLAS's A is the Q-like operand, its B the score-like one.
GemmCall keyRowsCall(const WorkloadSpec& spec, float alpha);

}  // namespace attnscope::cuda
