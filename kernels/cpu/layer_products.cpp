#include "kernels/cpu/layer_products.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/tile_kernels.h"
#include "kernels/cpu/transpose.h"

namespace attnscope::cpu {
namespace {

int64_t pad16(int64_t floats) { return (floats + 15) / 16 * 16; }

std::vector<Buffer<float>> perWorker(TrackingAllocator& alloc, int workers, int64_t floats, const std::string& name) {
  std::vector<Buffer<float>> b;
  b.reserve(static_cast<size_t>(workers));
  for (int w = 0; w < workers; ++w) b.emplace_back(alloc, floats, name + " (worker " + std::to_string(w) + ")");
  return b;
}

// Rows of a row-product task: a whole number of micro-kernel rows for every variant (mr is 6 or 8).
constexpr int64_t kRowBlock = 48;
// Weight gradients: blocks of the result, and rows of the sum per step.
constexpr int64_t kWeightBlock = 256;
constexpr int64_t kWeightChunk = 256;
// Row products on fp32 rows: the packed weight's columns per task hold at most this many floats
// (1 MiB, half of a 2 MiB L2), so a block is read from memory once and reused by every row block
// of the task. Measured on the Xeon model 207 (docs/PERFORMANCE.md): 48 x 1024 by 1024 x 3072,
// one thread, 69-100 GFLOP/s with the whole weight streamed per row block, 164-168 with a
// 1024 x 256 block that stays in L2.
constexpr int64_t kWeightBlockFloats = 256 * 1024;
// Tasks per worker to aim for, so the dynamic hand-out evens out the blocks.
constexpr int64_t kTasksPerWorker = 2;

}  // namespace

RowMatrix RowMatrix::plain(DType dtype, uint8_t* base, int64_t rows, int64_t cols) {
  RowMatrix m;
  m.dtype = dtype;
  m.rows_per_batch = rows;
  m.parts.push_back({base, 1, cols});
  return m;
}

int64_t RowMatrix::cols() const {
  int64_t c = 0;
  for (const Part& p : parts) c += p.heads * p.d;
  return c;
}

namespace {

// Calls f(part, element, column, count) for each run of element (i, c0 .. c0 + nc) of the
// matrix that lies in one head of one part: `element` indexes that part's tensor, `column` is the
// run's first column less c0.
template <typename F>
void forEachRun(const RowMatrix& m, int64_t row, int64_t c0, int64_t nc, F&& f) {
  const int64_t b = row / m.rows_per_batch, l = row % m.rows_per_batch;
  int64_t col = 0;
  for (const RowMatrix::Part& p : m.parts) {
    if (col >= c0 + nc) break;
    if (col + p.heads * p.d <= c0) {
      col += p.heads * p.d;
      continue;
    }
    for (int64_t h = 0; h < p.heads; ++h, col += p.d) {
      const int64_t lo = std::max(col, c0), hi = std::min(col + p.d, c0 + nc);
      if (lo < hi) f(p, ((b * p.heads + h) * m.rows_per_batch + l) * p.d + (lo - col), lo - c0, hi - lo);
    }
  }
}

}  // namespace

void RowMatrix::read(int64_t r0, int64_t n, int64_t c0, int64_t nc, float* out, int64_t ld) const {
  for (int64_t i = 0; i < n; ++i)
    forEachRun(*this, r0 + i, c0, nc, [&](const Part& p, int64_t at, int64_t col, int64_t count) {
      toFloat(dtype, p.base, at, count, out + i * ld + col);
    });
}

void RowMatrix::readBits(int64_t r0, int64_t n, int64_t c0, int64_t nc, uint16_t* out, int64_t ld) const {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t* row = out + i * ld;
    forEachRun(*this, r0 + i, c0, nc, [&](const Part& p, int64_t at, int64_t col, int64_t count) {
      std::memcpy(row + col, p.base + at * 2, static_cast<size_t>(count) * 2);
    });
    std::fill(row + nc, row + ld, uint16_t{0});
  }
}

void RowMatrix::write(int64_t r0, int64_t n, int64_t c0, int64_t nc, const float* in, int64_t ld) const {
  for (int64_t i = 0; i < n; ++i)
    forEachRun(*this, r0 + i, c0, nc, [&](const Part& p, int64_t at, int64_t col, int64_t count) {
      fromFloat(dtype, in + i * ld + col, count, p.base, at);
    });
}

bool RowMatrix::fp32Segments(int64_t r0, int64_t n, std::vector<Segment>& out) const {
  out.clear();
  const int64_t b = r0 / rows_per_batch, l = r0 % rows_per_batch;
  if (dtype != DType::fp32 || n <= 0 || (r0 + n - 1) / rows_per_batch != b) return false;
  int64_t k0 = 0;
  for (const Part& p : parts)
    for (int64_t h = 0; h < p.heads; ++h, k0 += p.d)
      out.push_back({reinterpret_cast<const float*>(p.base) + ((b * p.heads + h) * rows_per_batch + l) * p.d, p.d, k0,
                     p.d});
  return true;
}

void RowMatrix::write(int64_t r0, int64_t n, const float* in, int64_t ld) const {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = (r0 + i) / rows_per_batch, l = (r0 + i) % rows_per_batch;
    int64_t col = 0;
    for (const Part& p : parts)
      for (int64_t h = 0; h < p.heads; ++h, col += p.d)
        fromFloat(dtype, in + i * ld + col, p.d, p.base, ((b * p.heads + h) * rows_per_batch + l) * p.d);
  }
}

bool RowProduct::usesPairs(DType dtype) { return dtype == DType::bf16 && activeTileKernels().gemm_pairs != nullptr; }

RowProduct::Shape RowProduct::Shape::of(int64_t rows, int64_t k, int64_t n, int threads, DType dtype) {
  const TileKernels& kn = activeTileKernels();
  Shape s;
  s.rows = rows;
  s.block = std::min(kRowBlock, rows);
  const int64_t row_blocks = (rows + s.block - 1) / s.block;
  s.pairs = usesPairs(dtype);
  s.k2 = (k + 1) / 2 * 2;
  s.packed = s.pairs ? (kn.pair_elements(k, n) + 1) / 2 : kn.packedFloats(k, n);
  if (s.pairs) {
    // bf16 with vdpbf16ps: the weight packed in pairs and A's rows as their bf16 bits (each row
    // padded to an even length), in float units; each task a row block over every column.
    s.cols = n;
    s.row_groups = row_blocks;
  } else {
    // Column blocks of whole strips within the L2 budget; row groups enough to keep every
    // worker busy when there are few column blocks.
    const int64_t strips = (n + kn.nr - 1) / kn.nr;
    const int64_t per_block = std::clamp<int64_t>(kWeightBlockFloats / std::max<int64_t>(k, 1) / kn.nr, 1, strips);
    s.col_blocks = (strips + per_block - 1) / per_block;
    s.cols = std::min(per_block * kn.nr, n);
    s.rows_outer = k > n;
    s.row_groups = s.rows_outer ? row_blocks
                                : std::clamp<int64_t>((kTasksPerWorker * threads + s.col_blocks - 1) / s.col_blocks,
                                                      1, row_blocks);
  }
  s.tasks = s.rows_outer ? s.row_groups : s.col_blocks * s.row_groups;
  s.workers = static_cast<int>(std::clamp<int64_t>(s.tasks, 1, threads));
  const int64_t a_rows = s.pairs ? (s.block * s.k2 + 1) / 2 : s.block * (k + 16);
  // A's rows (fp32: k + 16 floats apart, for rows copied off a 4 KiB stride), the result's rows
  // (a column block of them), the bias as float.
  s.scratch = pad16(a_rows) + pad16(s.block * s.cols) + pad16(s.cols);
  return s;
}

void planRowProduct(MemoryPlan& p, int step, const std::string& name, const std::string& weight, int64_t rows,
                    int64_t k, int64_t n, int threads, DType dtype) {
  const RowProduct::Shape s = RowProduct::Shape::of(rows, k, n, threads, dtype);
  p.add(weight + " packed", s.packed * 4, step, step, BufferRole::workspace);
  for (int w = 0; w < s.workers; ++w)
    p.add(name + " rows (worker " + std::to_string(w) + ")", s.scratch * 4, step, step, BufferRole::workspace);
}

void runRowProduct(const RowProduct& p, int64_t rows, RunContext& ctx, TaskPool& pool) {
  const TileKernels& kn = activeTileKernels();
  const DType dtype = p.a->dtype;
  const RowProduct::Shape s = RowProduct::Shape::of(rows, p.k, p.n, pool.threads(), dtype);
  const int64_t elem = bytesPerElement(dtype), k = p.k, n = p.n;
  Buffer<float> packed(ctx.allocator(), s.packed, p.weight + " packed");
  uint16_t* const pairs = reinterpret_cast<uint16_t*>(packed.data());
  // The weight is packed once, in groups of strips (each group's strips land where a packing of
  // the whole weight puts them: strip j starts at j * nr * k floats, or j * nr * k2 bf16 pairs).
  const int64_t strips = (n + kn.nr - 1) / kn.nr, group = 8;
  pool.run((strips + group - 1) / group, pool.threads(),
           [&](int, int64_t t) {
             const int64_t n0 = t * group * kn.nr, nn = std::min(group * kn.nr, n - n0);
             const uint8_t* src = p.w + (p.transposed ? n0 * k : n0) * elem;
             if (s.pairs)
               kn.pack_pairs(reinterpret_cast<const uint16_t*>(src), p.transposed ? k : n, p.transposed, k, nn,
                             pairs + n0 * s.k2);
             else
               kn.pack_b(dtype, src, p.transposed ? k : n, p.transposed, k, nn, packed.data() + n0 * k);
           },
           &ctx);
  auto scratch = perWorker(ctx.allocator(), s.workers, s.scratch, p.name + " rows");
  const int64_t a_floats = s.pairs ? (s.block * s.k2 + 1) / 2 : s.block * (k + 16);
  const int64_t row_blocks = (rows + s.block - 1) / s.block;
  pool.run(s.tasks, s.workers,
           [&](int w, int64_t t) {
             float* a = scratch[w].data();
             float* c = a + pad16(a_floats);
             float* bias = c + pad16(s.block * s.cols);
             // Task t: with rows outer, row block t over every column block; else column block
             // t / row_groups over its share of the row blocks.
             const int64_t cb_begin = s.rows_outer ? 0 : t / s.row_groups;
             const int64_t cb_end = s.rows_outer ? s.col_blocks : cb_begin + 1, g = t % s.row_groups;
             std::vector<RowMatrix::Segment> segments;
             for (int64_t rb = g * row_blocks / s.row_groups; rb < (g + 1) * row_blocks / s.row_groups; ++rb) {
               ctx.throwIfCancelled();
               const int64_t r0 = rb * s.block, m = std::min(s.block, rows - r0);
               if (s.pairs) {
                 uint16_t* a16 = reinterpret_cast<uint16_t*>(a);
                 p.a->readBits(r0, m, 0, k, a16, s.k2);
                 kn.gemm_pairs(m, n, k, 1.0f, a16, s.k2, pairs, 0.0f, c, n);
                 if (p.bias) {
                   toFloat(dtype, p.bias, 0, n, bias);
                   for (int64_t i = 0; i < m; ++i)
                     for (int64_t j = 0; j < n; ++j) c[i * n + j] += bias[j];
                 }
                 p.out->write(r0, m, 0, n, c, n);
                 continue;
               }
               // fp32 A is read in place, head by head (one run when it is plain rows); else
               // converted to fp32 rows, once per row block. Rows a multiple of 4 KiB apart put the
               // micro-kernel's 12 rows of A in one L1 set: converted rows are then written 16
               // floats longer, and plain fp32 rows copied so (Zen 4, the qkv product at E 1024:
               // 186 -> 192-197 GFLOP/s on two threads, the copy counted).
               if (!p.a->fp32Segments(r0, m, segments)) {
                 const int64_t ld = k % 1024 == 0 ? k + 16 : k;
                 p.a->read(r0, m, 0, k, a, ld);
                 segments.push_back({a, ld, 0, k});
               } else if (segments.size() == 1 && segments[0].ld % 1024 == 0) {
                 for (int64_t i = 0; i < m; ++i)
                   std::memcpy(a + i * (k + 16), segments[0].rows + i * segments[0].ld, static_cast<size_t>(k) * 4);
                 segments[0] = {a, k + 16, 0, k};
               }
               for (int64_t cb = cb_begin; cb < cb_end; ++cb) {
                 // Strip j of the packed weight starts at j * nr * k floats, its row p at p * nr more.
                 const int64_t n0 = cb * s.cols, nn = std::min(s.cols, n - n0);
                 const float* strips0 = packed.data() + n0 * k;
                 for (const RowMatrix::Segment& sg : segments)
                   kn.gemm(m, nn, sg.d, 1.0f, sg.rows, sg.ld, strips0 + sg.k0 * kn.nr, kn.nr, k * kn.nr,
                           sg.k0 == 0 ? 0.0f : 1.0f, c, s.cols);
                 if (p.bias) {
                   toFloat(dtype, p.bias, n0, nn, bias);
                   for (int64_t i = 0; i < m; ++i)
                     for (int64_t j = 0; j < nn; ++j) c[i * s.cols + j] += bias[j];
                 }
                 p.out->write(r0, m, n0, nn, c, s.cols);
               }
             }
           },
           &ctx);
}

WeightGradient::Shape WeightGradient::Shape::of(int64_t rows, int64_t m, int64_t n, int nr, int threads,
                                               DType dtype) {
  Shape s;
  s.pairs = RowProduct::usesPairs(dtype);
  s.m_block = std::min(kWeightBlock, m);
  s.n_block = std::min(kWeightBlock, n);
  s.n_pad = (s.n_block + nr - 1) / nr * nr;
  s.m_blocks = (m + s.m_block - 1) / s.m_block;
  s.n_blocks = (n + s.n_block - 1) / s.n_block;
  s.chunk = std::min(kWeightChunk, rows);
  s.chunks = (rows + s.chunk - 1) / s.chunk;
  s.tasks = s.m_blocks * s.n_blocks;
  s.workers = static_cast<int>(std::clamp<int64_t>(s.tasks, 1, threads));
  const int64_t strips = (n + nr - 1) / nr;
  if (s.pairs) {
    // b packed in pairs chunk by chunk (each a pack_pairs of its rows over every column, at a
    // stride of a whole chunk's pairs); per worker a's chunk and its transpose as bits (rows of
    // the transpose padded to an even length), the sums, the bias sums; packing b reads a chunk
    // of a block of columns as bits into the same scratch.
    const TileKernels& kn = activeTileKernels();
    const int64_t c2 = (s.chunk + 1) / 2 * 2;
    s.chunk_packed = (kn.pair_elements(s.chunk, n) + 1) / 2;
    s.packed = s.chunks * s.chunk_packed;
    s.scratch = std::max(pad16((s.chunk * s.m_block + 1) / 2) + pad16((s.m_block * c2 + 1) / 2) +
                             pad16(s.m_block * s.n_pad) + pad16(s.m_block),
                         pad16((s.chunk * s.n_pad + 1) / 2));
  } else {
    // b packed as fp32 strips chunk by chunk (chunk c's strip j: cn rows of nr floats); per worker
    // a's chunk (read transposed in place by gemm_at), the sums, the bias sums.
    s.chunk_packed = s.chunk * strips * nr;
    s.packed = s.chunks * s.chunk_packed;
    s.scratch = pad16(s.chunk * s.m_block) + pad16(s.m_block * s.n_pad) + pad16(s.m_block);
  }
  return s;
}

void planWeightGradient(MemoryPlan& p, int step, const std::string& name, const std::string& input, int64_t rows,
                        int64_t m, int64_t n, int threads, DType dtype) {
  const WeightGradient::Shape s = WeightGradient::Shape::of(rows, m, n, activeTileKernels().nr, threads, dtype);
  p.add(input + " packed", s.packed * 4, step, step, BufferRole::workspace);
  for (int w = 0; w < s.workers; ++w)
    p.add(name + " (worker " + std::to_string(w) + ")", s.scratch * 4, step, step, BufferRole::workspace);
}

namespace {

// b's rows packed once for every block of dw, chunk by chunk of rows, in tasks of (chunk, group
// of strips): fp32 strips (converted as read), or bf16 pairs from its bits. Before this, each
// (block, chunk) read and packed its own columns of b again: M / 256 times over, which on Zen 4
// took a quarter of the fp32 product's time (memcpy) and more on bf16 pairs.
void packGradientInput(const WeightGradient& g, int64_t rows, const WeightGradient::Shape& s, float* packed,
                       std::vector<Buffer<float>>& scratch, RunContext& ctx, TaskPool& pool) {
  const TileKernels& kn = activeTileKernels();
  const int nr = kn.nr;
  const int64_t N = g.b->cols(), strips = (N + nr - 1) / nr, group = s.n_pad / nr;
  const int64_t groups = (strips + group - 1) / group;
  pool.run(s.chunks * groups, s.workers,
           [&](int w, int64_t t) {
             ctx.throwIfCancelled();
             const int64_t c = t / groups, r0 = c * s.chunk, cn = std::min(s.chunk, rows - r0);
             const int64_t j0 = t % groups * group * nr, nn = std::min(group * nr, N - j0);
             if (s.pairs) {
               // This chunk's pairs: strip j at j * pairs(cn) * nr * 2 bf16 from the chunk's start.
               uint16_t* bits = reinterpret_cast<uint16_t*>(scratch[static_cast<size_t>(w)].data());
               uint16_t* chunk = reinterpret_cast<uint16_t*>(packed + c * s.chunk_packed);
               g.b->readBits(r0, cn, j0, nn, bits, nn);
               kn.pack_pairs(bits, nn, false, cn, nn, chunk + j0 / nr * ((cn + 1) / 2) * nr * 2);
               return;
             }
             float* chunk = packed + c * s.chunk_packed;
             for (int64_t jj = 0; jj < nn; jj += nr) {
               float* strip = chunk + (j0 + jj) * cn;
               const int64_t cols = std::min<int64_t>(nr, nn - jj);
               g.b->read(r0, cn, j0 + jj, cols, strip, nr);
               if (cols < nr)
                 for (int64_t r = 0; r < cn; ++r) std::fill(strip + r * nr + cols, strip + (r + 1) * nr, 0.0f);
             }
           },
           &ctx);
}

// runWeightGradient on bf16 pairs: per chunk of rows, a's columns transposed as bits (its rows
// the pairs' k), one gemm_pairs on b's packed chunk into the fp32 sums.
void runWeightGradientPairs(const WeightGradient& g, int64_t rows, const WeightGradient::Shape& s,
                            const float* packed, std::vector<Buffer<float>>& scratch, RunContext& ctx,
                            TaskPool& pool) {
  const TileKernels& kn = activeTileKernels();
  const int64_t M = g.a->cols(), N = g.b->cols(), c2 = (s.chunk + 1) / 2 * 2;
  pool.run(s.tasks, s.workers,
           [&](int w, int64_t t) {
             const int64_t m0 = t / s.n_blocks * s.m_block, n0 = t % s.n_blocks * s.n_block;
             const int64_t mm = std::min(s.m_block, M - m0), nn = std::min(s.n_block, N - n0);
             const bool sums = g.db && n0 == 0;
             float* base = scratch[static_cast<size_t>(w)].data();
             uint16_t* ac = reinterpret_cast<uint16_t*>(base);
             base += pad16((s.chunk * s.m_block + 1) / 2);
             uint16_t* at = reinterpret_cast<uint16_t*>(base);
             base += pad16((s.m_block * c2 + 1) / 2);
             float* c = base;
             float* db = c + pad16(s.m_block * s.n_pad);
             std::fill(db, db + mm, 0.0f);
             for (int64_t r0 = 0; r0 < rows; r0 += s.chunk) {
               ctx.throwIfCancelled();
               const int64_t cn = std::min(s.chunk, rows - r0), cn2 = (cn + 1) / 2 * 2;
               g.a->readBits(r0, cn, m0, mm, ac, mm);
               transposeBlocked(ac, cn, mm, mm, at, cn2);
               if (cn2 > cn)
                 for (int64_t i = 0; i < mm; ++i) at[i * cn2 + cn] = 0;
               // Row by row over the chunk as read (the loop over i vectorises; each db[i] still adds
               // its rows in order).
               if (sums)
                 for (int64_t r = 0; r < cn; ++r)
                   for (int64_t i = 0; i < mm; ++i) db[i] += bf16ToFloat(ac[r * mm + i]);
               const uint16_t* bp = reinterpret_cast<const uint16_t*>(packed + r0 / s.chunk * s.chunk_packed) +
                                    n0 / kn.nr * (cn2 / 2) * kn.nr * 2;
               kn.gemm_pairs(mm, nn, cn, 1.0f, at, cn2, bp, r0 == 0 ? 0.0f : 1.0f, c, s.n_pad);
             }
             for (int64_t i = 0; i < mm; ++i) fromFloat(g.dtype, c + i * s.n_pad, nn, g.dw, (m0 + i) * N + n0);
             if (sums) fromFloat(g.dtype, db, mm, g.db, m0);
           },
           &ctx);
}

}  // namespace

void runWeightGradient(const WeightGradient& g, int64_t rows, RunContext& ctx, TaskPool& pool) {
  const TileKernels& kn = activeTileKernels();
  const int64_t M = g.a->cols(), N = g.b->cols();
  const WeightGradient::Shape s = WeightGradient::Shape::of(rows, M, N, kn.nr, pool.threads(), g.dtype);
  Buffer<float> packed(ctx.allocator(), s.packed, g.input + " packed");
  auto scratch = perWorker(ctx.allocator(), s.workers, s.scratch, g.name);
  packGradientInput(g, rows, s, packed.data(), scratch, ctx, pool);
  if (s.pairs) {
    runWeightGradientPairs(g, rows, s, packed.data(), scratch, ctx, pool);
    return;
  }
  pool.run(s.tasks, s.workers,
           [&](int w, int64_t t) {
             const int64_t m0 = t / s.n_blocks * s.m_block, n0 = t % s.n_blocks * s.n_block;
             const int64_t mm = std::min(s.m_block, M - m0), nn = std::min(s.n_block, N - n0);
             const bool sums = g.db && n0 == 0;  // the bias gradient once per row block of dw
             float* ac = scratch[static_cast<size_t>(w)].data();
             float* c = ac + pad16(s.chunk * s.m_block);
             float* db = c + pad16(s.m_block * s.n_pad);
             std::fill(db, db + mm, 0.0f);
             const int nr = kn.nr;
             for (int64_t r0 = 0; r0 < rows; r0 += s.chunk) {
               ctx.throwIfCancelled();
               const int64_t cn = std::min(s.chunk, rows - r0);
               // a's chunk as read (cn rows of mm) is a^T's transpose: gemm_at reads it in place.
               g.a->read(r0, cn, m0, mm, ac, mm);
               if (sums)
                 for (int64_t r = 0; r < cn; ++r)
                   for (int64_t i = 0; i < mm; ++i) db[i] += ac[r * mm + i];
               // b's packed chunk from this block's first strip (strip j at j * cn * nr floats).
               const float* bc = packed.data() + r0 / s.chunk * s.chunk_packed + n0 * cn;
               kn.gemm_at(mm, nn, cn, 1.0f, ac, mm, bc, nr, cn * nr, r0 == 0 ? 0.0f : 1.0f, c, s.n_pad);
             }
             for (int64_t i = 0; i < mm; ++i) fromFloat(g.dtype, c + i * s.n_pad, nn, g.dw, (m0 + i) * N + n0);
             if (sums) fromFloat(g.dtype, db, mm, g.db, m0);
           },
           &ctx);
}

}  // namespace attnscope::cpu
