// The CUDA backward's arithmetic run on the host, against the float64 gradients (checkGradients),
// without a GPU:
//  - cuda.flash: the two kernel bodies (flash_bwd_body.h), the very code flash_bwd.cu launches,
//    run block by block with one thread per block, and with five host threads per block (a
//    barrier for sync), with the FlashParams the backend builds (flashParams) and shared memory
//    filled with NaN before each block, so a read of anything not yet written shows;
//  - cuda.math: its cuBLAS calls (math_gemms.h) executed by an emulator of cublasGemmStrided-
//    BatchedEx's column-major semantics, written from cuBLAS's documentation, with every stored
//    tensor rounded to the input type as on the device; the softmax and softmax backward in
//    between written here from their kernels' formulas.
// O and the log-sum-exp the flash backward reads come from a float64 forward here.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/inputs/host_inputs.h"
#include "core/check/reference.h"
#include "core/check/reference_grad.h"
#include "kernels/cuda/flash_bwd_body.h"
#include "kernels/cuda/flash_layout.h"
#include "kernels/cuda/math_gemms.h"
#include "kernels/cuda/softmax_bwd_body.h"

using namespace attnscope;
using namespace attnscope::cuda;

namespace {

struct HostF32 {
  using Storage = float;
  static float load(const float* p, int64_t i) { return p[i]; }
  static void store(float* p, int64_t i, float x) { p[i] = x; }
};
struct HostF16 {
  using Storage = uint16_t;
  static float load(const uint16_t* p, int64_t i) { return halfToFloat(p[i]); }
  static void store(uint16_t* p, int64_t i, float x) { p[i] = floatToHalf(x); }
};
struct HostBF16 {
  using Storage = uint16_t;
  static float load(const uint16_t* p, int64_t i) { return bf16ToFloat(p[i]); }
  static void store(uint16_t* p, int64_t i, float x) { p[i] = floatToBf16(x); }
};
struct SerialBlock {
  int64_t tid() const { return 0; }
  int64_t threads() const { return 1; }
  void sync() const {}
  float sum(float part) const { return part; }
};
// A block of several host threads: sync() is a barrier, sum() goes through a shared array, so a
// body that reads shared memory another thread writes before a sync, or lets two threads write
// one element, can show it (run with the NaN-filled shared memory, a read too early is a NaN).
struct ThreadedBlock {
  int64_t t, n;
  std::barrier<>* bar;
  float* partial;
  int64_t tid() const { return t; }
  int64_t threads() const { return n; }
  void sync() const { bar->arrive_and_wait(); }
  float sum(float part) const {
    partial[t] = part;
    sync();
    float total = 0.f;
    for (int64_t w = 0; w < n; ++w) total += partial[w];
    sync();
    return total;
  }
};

// Runs body(block) as one block of `threads` threads (1: SerialBlock on this thread).
template <typename Body>
void runBlock(int threads, const Body& body) {
  if (threads == 1) {
    body(SerialBlock{});
    return;
  }
  std::barrier<> bar(threads);
  std::vector<float> partial(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { body(ThreadedBlock{t, threads, &bar, partial.data()}); });
  for (auto& th : pool) th.join();
}

// cuda.math's tensors are held here as floats already rounded to the dtype; a store rounds.
template <DType kDtype>
struct Rounded {
  using Storage = float;
  static float load(const float* p, int64_t i) { return p[i]; }
  static void store(float* p, int64_t i, float x) { p[i] = roundTo(kDtype, x); }
};

struct Shape {
  int64_t b, h, hkv, lq, lkv, d;
  DType dtype;
  const char* mask;
  MaskLayout layout = MaskLayout::broadcast;
};

WorkloadSpec trainSpec(const Shape& c) {
  WorkloadSpec s;
  s.batch = c.b;
  s.heads = c.h;
  s.kv_heads = c.hkv;
  s.seq_q = c.lq;
  s.seq_kv = c.lkv;
  s.head_dim = c.d;
  s.dtype = c.dtype;
  s.mask = *parseMask(c.mask).mask;
  s.mask_layout = c.layout;
  s.seed = 5;
  s.pass = Pass::train;
  return s;
}

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16}) {
    for (const char* m : {"none", "causal", "window:17", "block:40", "dense:0.3"}) out.push_back({1, 4, 2, 97, 97, 24, dt, m});
    out.push_back({2, 2, 1, 70, 45, 16, dt, "dense:0.5", MaskLayout::per_head});
    out.push_back({1, 2, 1, 90, 40, 8, dt, "causal"});  // the first 50 rows see no key
    out.push_back({1, 3, 1, 40, 75, 136, dt, "window:9"});  // wide heads: 16 x 16 tiles
  }
  out.push_back({1, 1, 1, 1, 1, 8, DType::fp16, "none"});
  return out;
}

bool sees(const WorkloadSpec& s, const HostInputs& in, int64_t bh, int64_t i, int64_t j) {
  if (!referenceAttends(s.mask, i, j, s.seq_q, s.seqKv())) return false;
  if (s.mask.kind != MaskKind::dense) return true;
  const int64_t plane = s.mask_layout == MaskLayout::per_head ? bh : 0;
  return in.mask[(plane * s.seq_q + i) * s.seqKv() + j] != 0;
}

// O rounded to the dtype and the natural log-sum-exp (-inf for a row with no key), in float64.
void forward(const WorkloadSpec& s, const HostInputs& in, HostTensor& o, std::vector<float>& lse) {
  const int64_t H = s.heads, Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim(), group = H / s.kvHeads();
  o = HostTensor::zeros(s.dtype, {s.batch, H, Lq, D});
  lse.assign(static_cast<size_t>(s.batch * H * Lq), -std::numeric_limits<float>::infinity());
  std::vector<double> x(static_cast<size_t>(Lkv));
  for (int64_t bh = 0; bh < s.batch * H; ++bh) {
    const int64_t kv = (bh / H) * s.kvHeads() + (bh % H) / group;
    for (int64_t i = 0; i < Lq; ++i) {
      double m = -INFINITY;
      for (int64_t j = 0; j < Lkv; ++j) {
        x[j] = -INFINITY;
        if (!sees(s, in, bh, i, j)) continue;
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += double(in.q.at((bh * Lq + i) * D + d)) * in.k.at((kv * Lkv + j) * D + d);
        x[j] = dot * s.effectiveScale();
        m = std::max(m, x[j]);
      }
      if (m == -INFINITY) continue;
      double sum = 0;
      for (int64_t j = 0; j < Lkv; ++j) sum += x[j] == -INFINITY ? 0 : std::exp(x[j] - m);
      lse[bh * Lq + i] = static_cast<float>(m + std::log(sum));
      for (int64_t d = 0; d < D; ++d) {
        double acc = 0;
        for (int64_t j = 0; j < Lkv; ++j)
          if (x[j] != -INFINITY) acc += std::exp(x[j] - m) / sum * in.v.at((kv * Lkv + j) * D + d);
        o.set((bh * Lq + i) * D + d, static_cast<float>(acc));
      }
    }
  }
}

AttentionGradients asFloat(const HostTensor& dq, const HostTensor& dk, const HostTensor& dv) {
  AttentionGradients g;
  for (auto [t, out] : {std::pair{&dq, &g.dq}, std::pair{&dk, &g.dk}, std::pair{&dv, &g.dv}})
    for (int64_t i = 0; i < t->elements(); ++i) out->push_back(t->at(i));
  return g;
}

template <typename Elem>
AttentionGradients flashBackward(const WorkloadSpec& s, const HostInputs& in, int threads) {
  HostTensor o;
  std::vector<float> lse;
  forward(s, in, o, lse);
  HostTensor dq = HostTensor::zeros(s.dtype, {s.batch, s.heads, s.seq_q, s.headDim()});
  HostTensor dk = HostTensor::zeros(s.dtype, {s.batch, s.kvHeads(), s.seqKv(), s.headDim()});
  HostTensor dv = dk;
  FlashBwdParams bp;
  bp.fwd = flashParams(s);
  bp.fwd.q = in.q.data();
  bp.fwd.k = in.k.data();
  bp.fwd.v = in.v.data();
  bp.fwd.o = o.bytes.data();
  bp.fwd.lse = lse.data();
  if (s.mask.kind == MaskKind::dense) bp.fwd.mask = in.mask.data();
  bp.g = in.g.data();
  bp.dq = dq.bytes.data();
  bp.dk = dk.bytes.data();
  bp.dv = dv.bytes.data();
  std::vector<float> smem(static_cast<size_t>(flashBwdLayout(s.headDim()).floats));
  const Grid3 kg = flashBwdKeyGrid(s.batch, s.kvHeads(), s.seqKv(), s.headDim());
  for (int64_t z = 0; z < kg.z; ++z)
    for (int64_t y = 0; y < kg.y; ++y)
      for (int64_t x = 0; x < kg.x; ++x) {
        std::fill(smem.begin(), smem.end(), std::numeric_limits<float>::quiet_NaN());
        runBlock(threads, [&](const auto& blk) { flashbwd::keyTile<Elem>(blk, smem.data(), bp, x, y, z); });
      }
  const Grid3 qg = flashBwdQueryGrid(s.batch, s.heads, s.seq_q, s.headDim());
  for (int64_t z = 0; z < qg.z; ++z)
    for (int64_t y = 0; y < qg.y; ++y)
      for (int64_t x = 0; x < qg.x; ++x) {
        std::fill(smem.begin(), smem.end(), std::numeric_limits<float>::quiet_NaN());
        runBlock(threads, [&](const auto& blk) { flashbwd::queryBlock<Elem>(blk, smem.data(), bp, x, y, z); });
      }
  return asFloat(dq, dk, dv);
}

// cublasGemmStridedBatchedEx as documented: column-major, C_t = alpha op(A_t) op(B_t) (beta 0),
// fp32 accumulation, C rounded to the dtype.
void gemm(const GemmCall& c, DType dt, const std::vector<float>& A, const std::vector<float>& B, std::vector<float>& C) {
  for (int64_t t = 0; t < c.batch; ++t)
    for (int64_t j = 0; j < c.n; ++j)
      for (int64_t i = 0; i < c.m; ++i) {
        float acc = 0.f;
        for (int64_t l = 0; l < c.k; ++l) {
          const int64_t a = c.a_offset + t * c.stride_a + (c.trans_a ? l + i * c.lda : i + l * c.lda);
          const int64_t b = c.b_offset + t * c.stride_b + (c.trans_b ? j + l * c.ldb : l + j * c.ldb);
          acc += A.at(static_cast<size_t>(a)) * B.at(static_cast<size_t>(b));
        }
        C.at(static_cast<size_t>(c.c_offset + t * c.stride_c + i + j * c.ldc)) = roundTo(dt, c.alpha * acc);
      }
}

std::vector<float> values(const HostTensor& t) {
  std::vector<float> v(static_cast<size_t>(t.elements()));
  for (int64_t i = 0; i < t.elements(); ++i) v[i] = t.at(i);
  return v;
}

// cuda.math's forward (in chunks of `chunk` query rows) and backward, as its calls and kernels
// compute them. Returns O; fills the gradients when the chunk holds every query (train).
std::vector<float> mathPass(const WorkloadSpec& s, const HostInputs& in, int64_t chunk, AttentionGradients* grads,
                            int threads = 1, const std::function<void(GemmCall&)>& tweak_dv = {}) {
  const int64_t H = s.heads, Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const DType dt = s.dtype;
  const float scale = static_cast<float>(s.effectiveScale());
  const std::vector<float> q = values(in.q), k = values(in.k), v = values(in.v);
  std::vector<float> o(static_cast<size_t>(s.qElements()), NAN), scores, probs;
  for (int64_t q0 = 0; q0 < Lq; q0 += chunk) {
    const int64_t rows = std::min(chunk, Lq - q0);
    scores.assign(static_cast<size_t>(s.batch * H * rows * Lkv), NAN);
    probs = scores;
    for (const GemmCall& c : rowsByKeysCalls(s, q0, rows, scale)) gemm(c, dt, k, q, scores);
    // The masked softmax kernel: -inf outside the mask, P = 0 there and on rows with no key.
    for (int64_t bh = 0; bh < s.batch * H; ++bh)
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = &scores[(bh * rows + r) * Lkv];
        float* p = &probs[(bh * rows + r) * Lkv];
        float m = -INFINITY, sum = 0.f;
        for (int64_t j = 0; j < Lkv; ++j)
          if (sees(s, in, bh, q0 + r, j)) m = std::max(m, x[j]);
        for (int64_t j = 0; j < Lkv; ++j)
          if (sees(s, in, bh, q0 + r, j)) sum += std::exp(x[j] - m);
        for (int64_t j = 0; j < Lkv; ++j)
          p[j] = sees(s, in, bh, q0 + r, j) ? roundTo(dt, std::exp(x[j] - m) / sum) : 0.f;
      }
    for (const GemmCall& c : scoresByValuesCalls(s, q0, rows, 1.f)) gemm(c, dt, v, probs, o);
  }
  if (!grads) return o;
  const std::vector<float> g = values(in.g);
  std::vector<float> ds(static_cast<size_t>(s.scoreElements()), NAN);
  for (const GemmCall& c : rowsByKeysCalls(s, 0, Lq, 1.f)) gemm(c, dt, v, g, ds);  // dP = dO V^T
  // The softmax backward kernel's body, in place: dS = P * (dP - delta), delta = dO . O.
  SoftmaxBackwardParams sp;
  sp.probs = probs.data();
  sp.ds = ds.data();
  sp.o = o.data();
  sp.g = g.data();
  sp.batch = static_cast<int>(s.batch);
  sp.heads = static_cast<int>(H);
  sp.seq_q = Lq;
  sp.seq_kv = Lkv;
  sp.head_dim = D;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i)
        runBlock(threads, [&](const auto& blk) {
          if (dt == DType::fp16) softmaxbwd::row<Rounded<DType::fp16>>(blk, sp, i, h, b);
          else if (dt == DType::bf16) softmaxbwd::row<Rounded<DType::bf16>>(blk, sp, i, h, b);
          else softmaxbwd::row<Rounded<DType::fp32>>(blk, sp, i, h, b);
        });
  grads->dq.assign(static_cast<size_t>(s.qElements()), NAN);
  grads->dk.assign(static_cast<size_t>(s.kvElements()), NAN);
  grads->dv.assign(static_cast<size_t>(s.kvElements()), NAN);
  for (const GemmCall& c : scoresByValuesCalls(s, 0, Lq, scale)) gemm(c, dt, k, ds, grads->dq);
  gemm(keyRowsCall(s, scale), dt, q, ds, grads->dk);
  GemmCall dv = keyRowsCall(s, 1.f);
  if (tweak_dv) tweak_dv(dv);
  gemm(dv, dt, g, probs, grads->dv);
  return o;
}

std::string where(const WorkloadSpec& s) { return summary(s) + " layout " + std::string(toString(s.mask_layout)); }

}  // namespace

TEST(CudaBackwardSerial, FlashKernelBodiesMatchFloat64) {
  for (const Shape& shape : shapes()) {
    const WorkloadSpec s = trainSpec(shape);
    ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
    const HostInputs in = HostInputs::generate(s);
    const AttentionGradients g = s.dtype == DType::fp32   ? flashBackward<HostF32>(s, in, 1)
                                 : s.dtype == DType::fp16 ? flashBackward<HostF16>(s, in, 1)
                                                          : flashBackward<HostBF16>(s, in, 1);
    std::string problem;
    const Accuracy a = checkGradients(s, in, g, nullptr, &problem);
    EXPECT_TRUE(a.passed()) << where(s) << ": " << problem << " error " << a.max_abs_error;
  }
}

TEST(CudaBackwardSerial, MathGemmCallsMatchFloat64) {
  for (const Shape& shape : shapes()) {
    const WorkloadSpec s = trainSpec(shape);
    const HostInputs in = HostInputs::generate(s);
    AttentionGradients g;
    const std::vector<float> o = mathPass(s, in, s.seq_q, &g);
    std::string problem;
    const Accuracy out = checkAccuracy(s, in, o, nullptr, &problem);
    EXPECT_TRUE(out.passed()) << where(s) << ": " << problem;
    const Accuracy a = checkGradients(s, in, g, nullptr, &problem);
    EXPECT_TRUE(a.passed()) << where(s) << ": " << problem << " error " << a.max_abs_error;
    // cuda.chunked's forward: one call per head of the group, ragged last chunk.
    const std::vector<float> chunked = mathPass(s, in, 7, nullptr);
    EXPECT_TRUE(checkAccuracy(s, in, chunked, nullptr, &problem).passed()) << where(s) << " in chunks: " << problem;
  }
}

// The same bodies with five threads per block (an odd count, so the strided loops split their
// elements unevenly): the syncs are where the bodies need them, and no element has two writers.
TEST(CudaBackwardSerial, BodiesWithSeveralThreadsPerBlock) {
  for (const Shape& shape : {Shape{1, 4, 2, 40, 70, 16, DType::fp32, "causal"},
                             Shape{2, 2, 1, 33, 45, 24, DType::bf16, "dense:0.5", MaskLayout::per_head},
                             Shape{1, 2, 1, 20, 30, 136, DType::fp16, "window:9"}}) {
    const WorkloadSpec s = trainSpec(shape);
    const HostInputs in = HostInputs::generate(s);
    const AttentionGradients serial = s.dtype == DType::fp32   ? flashBackward<HostF32>(s, in, 1)
                                      : s.dtype == DType::fp16 ? flashBackward<HostF16>(s, in, 1)
                                                               : flashBackward<HostBF16>(s, in, 1);
    const AttentionGradients threaded = s.dtype == DType::fp32   ? flashBackward<HostF32>(s, in, 5)
                                        : s.dtype == DType::fp16 ? flashBackward<HostF16>(s, in, 5)
                                                                 : flashBackward<HostBF16>(s, in, 5);
    // Each element is summed by one thread in the same order as with one thread: equal bit for bit.
    EXPECT_EQ(serial.dq, threaded.dq) << where(s);
    EXPECT_EQ(serial.dk, threaded.dk) << where(s);
    EXPECT_EQ(serial.dv, threaded.dv) << where(s);
    AttentionGradients math;
    mathPass(s, in, s.seq_q, &math, 5);
    std::string problem;
    EXPECT_TRUE(checkGradients(s, in, math, nullptr, &problem).passed()) << where(s) << ": " << problem;
  }
}

// The emulation is not vacuous: dV summed over only the first head of each group (K = Lq in
// place of group x Lq) fails the check.
TEST(CudaBackwardSerial, AWrongCallFails) {
  const WorkloadSpec s = trainSpec({1, 4, 2, 33, 50, 16, DType::fp32, "causal"});
  const HostInputs in = HostInputs::generate(s);
  AttentionGradients g;
  mathPass(s, in, s.seq_q, &g);
  ASSERT_TRUE(checkGradients(s, in, g).passed());
  AttentionGradients bad;
  mathPass(s, in, s.seq_q, &bad, 1, [&](GemmCall& c) {
    ASSERT_EQ(c.k, 2 * s.seq_q);
    c.k = s.seq_q;
  });
  std::string problem;
  EXPECT_FALSE(checkGradients(s, in, bad, nullptr, &problem).passed());
  EXPECT_NE(problem.find("dv"), std::string::npos) << problem;
}
