#pragma once
// The matrix products of a kind = layer run (cpu_layer.h), on the same tile kernels as the
// attention (tile_kernels.h): operands stored in the spec's dtype are converted to fp32 rows as
// they are read (fp16/bf16 tensors stay narrow in memory, as in the attention), products
// accumulate in fp32, results are rounded to the dtype as they are stored. Every scratch buffer
// comes from the run's allocator and each product's plan names it (planRowProduct,
// planWeightGradient), sized by the same Shape the product uses.
//
// Why not cpu_blas.h's sgemm: OpenBLAS allocates its own buffers outside the tracking allocator
// (the measured peak would miss them), it is optional (without it the product is a plain loop
// nest), and it takes fp32 only, so fp16/bf16 operands would need whole fp32 copies.

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec/dtype.h"
#include "core/backend/memory_plan.h"
#include "kernels/cpu/cpu_backend.h"

namespace attnscope::cpu {

// A matrix of R = B x L rows seen through tensors stored in one dtype: the columns are the
// parts side by side, each part a [B, heads, L, d] tensor whose heads sit side by side (a
// plain row-major [R, C] tensor is one part with B = 1, heads = 1, L = R, d = C). So the heads
// of q, k, v (or dq, dk, dv) read as the fused [R, (H + 2 Hkv) D] matrix, and o as [R, H D]:
// the split and merge of heads happen in the reads and writes, with no merged copy.
struct RowMatrix {
  struct Part {
    uint8_t* base = nullptr;
    int64_t heads = 1, d = 0;
  };
  DType dtype = DType::fp32;
  int64_t rows_per_batch = 0;  // L
  std::vector<Part> parts;

  static RowMatrix plain(DType dtype, uint8_t* base, int64_t rows, int64_t cols);
  int64_t cols() const;
  // out[i * ld + j] = element (r0 + i, c0 + j) as float, for i < n, j < nc.
  void read(int64_t r0, int64_t n, int64_t c0, int64_t nc, float* out, int64_t ld) const;
  // bf16 only: the raw bits of rows r0 .. r0 + n, columns c0 .. c0 + nc, out[i * ld + j]; columns
  // from nc to ld are zero (ld >= nc).
  void readBits(int64_t r0, int64_t n, int64_t c0, int64_t nc, uint16_t* out, int64_t ld) const;
  // Element (r0 + i, j) = in[i * ld + j] rounded to the dtype, for i < n and every column j.
  void write(int64_t r0, int64_t n, const float* in, int64_t ld) const;
  // Element (r0 + i, c0 + j) = in[i * ld + j] rounded to the dtype, for i < n, j < nc.
  void write(int64_t r0, int64_t n, int64_t c0, int64_t nc, const float* in, int64_t ld) const;
  // fp32 only: rows r0 .. r0 + n as the runs of columns each head stores contiguously, so a
  // product reads them in place: run i is columns [k0, k0 + d) at `rows`, rows ld floats apart.
  // Writes them to `out` (cleared first; its capacity is reused across calls) and returns false,
  // leaving `out` empty, when the dtype is not fp32 or the rows cross a batch.
  struct Segment {
    const float* rows;
    int64_t ld, k0, d;
  };
  bool fp32Segments(int64_t r0, int64_t n, std::vector<Segment>& out) const;
};

// out = a * op(w) + bias: a is R x K, w a stored weight (transposed: stored N rows of K, as
// nn.Linear's weight; else K rows of N), bias N values or none. The weight is packed once for
// all tasks. On fp32 rows the weight is cut into blocks of columns small enough to stay in L2
// (kWeightBlockFloats). Where K <= N (the forward projections, dO) each task is one such block
// over a group of row blocks: the weight is read from memory once, where tasks of whole-width
// row blocks streamed all of it per 48 rows. Where K > N (the layer's dx, K = 3 x N) a row block
// of A (48 x K) outweighs a block of the weight, so rows go outside: each task is one row block
// over every column block, A staying in cache while the weight streams past (Zen 4, dx: 130-163
// -> 167-175 GFLOP/s on two threads; the same order on the qkv product lost 12 %). Rows that
// are not fp32 are converted once per row block. On bf16 pairs each task is one block of rows
// over every column.
struct RowProduct {
  const RowMatrix* a = nullptr;
  const uint8_t* w = nullptr;
  bool transposed = true;
  const uint8_t* bias = nullptr;  // N values in a's dtype, or nullptr
  const RowMatrix* out = nullptr;
  int64_t k = 0, n = 0;
  std::string weight;  // names the packed weight: "<weight> packed"
  std::string name;    // names the scratch: "<name> rows (worker i)"

  // Whether a product of this dtype runs on bf16 pairs (vdpbf16ps: bf16 operands as stored, fp32
  // sums) instead of fp32 rows: bf16 where the active kernels have gemm_pairs.
  static bool usesPairs(DType dtype);

  struct Shape {
    int64_t rows = 0, block = 0, tasks = 0, packed = 0, scratch = 0, k2 = 0;  // sizes in floats
    // Columns per task (a whole number of strips, or n) and how many such blocks; row groups
    // per column block (tasks = col_blocks * row_groups). Pairs: one column block of n.
    int64_t cols = 0, col_blocks = 1, row_groups = 0;
    int workers = 0;
    bool pairs = false;
    bool rows_outer = false;  // K > N on fp32 rows: task t is row block t over every column block
    static Shape of(int64_t rows, int64_t k, int64_t n, int threads, DType dtype);
  };
};
void planRowProduct(MemoryPlan& plan, int step, const std::string& name, const std::string& weight, int64_t rows,
                    int64_t k, int64_t n, int threads, DType dtype);
void runRowProduct(const RowProduct& p, int64_t rows, RunContext& ctx, TaskPool& pool);

// dw = a^T b (M x N, stored row-major in the dtype) and, when db is given, db = the column sums
// of a (M values): the gradients of a linear layer's weight and bias, summed over the R rows.
// b is packed once, chunk by chunk of rows ("<input> packed": fp32 strips, or bf16 pairs), for
// every block of dw; tasks over (M block, N block) then walk the chunks, reading a's columns.
struct WeightGradient {
  const RowMatrix* a = nullptr;  // R x M (the output's gradient)
  const RowMatrix* b = nullptr;  // R x N (the layer's input)
  uint8_t* dw = nullptr;
  uint8_t* db = nullptr;
  DType dtype = DType::fp32;
  std::string name;   // names the scratch: "<name> (worker i)"
  std::string input;  // names b's packing: "<input> packed"

  struct Shape {
    int64_t m_block = 0, n_block = 0, n_pad = 0, m_blocks = 0, n_blocks = 0, chunk = 0, chunks = 0, tasks = 0;
    int64_t scratch = 0, packed = 0, chunk_packed = 0;  // floats: per worker, b packed, one chunk of it
    int workers = 0;
    bool pairs = false;  // on bf16 pairs (RowProduct::usesPairs)
    static Shape of(int64_t rows, int64_t m, int64_t n, int nr, int threads, DType dtype);
  };
};
void planWeightGradient(MemoryPlan& plan, int step, const std::string& name, const std::string& input, int64_t rows,
                        int64_t m, int64_t n, int threads, DType dtype);
void runWeightGradient(const WeightGradient& g, int64_t rows, RunContext& ctx, TaskPool& pool);

}  // namespace attnscope::cpu
