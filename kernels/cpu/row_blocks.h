#pragma once
// How cpu.reference's forward and backward split their work into tasks: blocks of rows of every
// head, small enough that a task takes milliseconds (a cancel is seen quickly and the threads
// share the work evenly), large enough for the tile kernels.

#include <algorithm>
#include <cstdint>

namespace attnscope::cpu {

// Rows of one head per task, when each row is `other` long (the other sequence) or head_dim wide.
inline int64_t rowsPerTask(int64_t other, int64_t head_dim) {
  const int64_t target = (int64_t{1} << 22) / std::max<int64_t>(1, std::max(other, head_dim));
  return std::clamp<int64_t>(target, 1, 256);
}

// Tasks over blocks of `rows` rows of each of `heads` heads of `length` rows: task t covers rows
// [t % per_head * rows, + rows) of head t / per_head. The forward's and the backward's dS and dQ
// run over query rows of (b, h); the backward's dK and dV over key rows of (b, kv head).
struct RowBlocks {
  int64_t rows = 0, per_head = 0, tasks = 0;
  int workers = 0;
  static RowBlocks of(int64_t heads, int64_t length, int64_t other, int64_t head_dim, int threads) {
    RowBlocks w;
    w.rows = std::min(rowsPerTask(other, head_dim), std::max<int64_t>(1, length));
    w.per_head = (length + w.rows - 1) / w.rows;
    w.tasks = heads * w.per_head;
    w.workers = static_cast<int>(std::clamp<int64_t>(w.tasks, 1, threads));
    return w;
  }
};

}  // namespace attnscope::cpu
