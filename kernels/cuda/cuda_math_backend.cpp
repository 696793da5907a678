#include "kernels/cuda/cuda_math_backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/base/format.h"
#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_stream.h"
#include "kernels/cuda/math_gemms.h"

namespace attnscope::cuda {
namespace {

[[noreturn]] void throwCublas(cublasStatus_t st, const char* what) {
  throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(st));
}

#define ATTNSCOPE_CUBLAS_CHECK(call)                                   \
  do {                                                                 \
    cublasStatus_t attnscope_st_ = (call);                             \
    if (attnscope_st_ != CUBLAS_STATUS_SUCCESS) throwCublas(attnscope_st_, #call); \
  } while (0)

cudaDataType_t cudaType(DType d) {
  switch (d) {
    case DType::fp16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

ElemType elemType(DType d) {
  switch (d) {
    case DType::fp16: return ElemType::fp16;
    case DType::bf16: return ElemType::bf16;
    default: return ElemType::fp32;
  }
}

TileMask tileMask(MaskKind k) { return static_cast<TileMask>(static_cast<int>(k)); }

// pass = forward runs the chunks between the two timer events, its buffers allocated before the
// timer starts. pass = train (cuda.math only, one chunk) keeps P from the forward and runs the
// backward through cuBLAS and the softmax-backward kernel; each of its phases waits for its
// kernels, so the host-timed phases (and the memory inside them) hold what ran in them.
class MathExecution final : public Execution {
 public:
  MathExecution(const WorkloadSpec& spec, const HostInputs& in, RunContext& ctx, cublasHandle_t handle,
                int64_t chunk_rows)
      : spec_(spec), ctx_(ctx), handle_(handle), z_(materialisingSizes(spec, chunk_rows)) {
    PhaseScope phase(ctx, "inputs");
    TrackingAllocator& a = ctx.allocator();
    in_ = uploadInputs(a, in, z_.q, z_.k, z_.v, z_.mask, stream_);
    o_ = Buffer<uint8_t>(a, z_.o, "o");
    workspace_ = Buffer<uint8_t>(a, z_.workspace, "cublas workspace");
    if (spec.pass == Pass::train) {
      if (z_.chunk_rows != spec.seq_q) throw std::invalid_argument("pass train runs on cuda.math, not in chunks");
      grads_ = allocateGradients(a, spec, in, stream_);
    }
  }

  double run() override {
    ctx_.throwIfCancelled();
    if (spec_.pass == Pass::train) return runTrain();
    PhaseScope phase(ctx_, "attention");
    // Allocated per forward pass, as a framework would, but before the timer starts so that
    // cudaMalloc's host time is not counted as device time.
    ForwardBuffers f = allocateForward();
    bindCublas();
    stream_.startTimer();
    forwardChunks(f);
    return stream_.stopTimer();
  }

  void output(std::vector<float>& out) override {
    downloadAsFloat(o_.data(), spec_.qElements(), spec_.dtype, out, stream_);
  }
  bool gradients(AttentionGradients& out) override { return downloadGradients(spec_, grads_, out, stream_); }

 private:
  struct ForwardBuffers {
    Buffer<uint8_t> bias, scores, probs;
  };

  int64_t eb() const { return bytesPerElement(spec_.dtype); }
  float scale() const { return static_cast<float>(spec_.effectiveScale()); }

  ForwardBuffers allocateForward() {
    TrackingAllocator& a = ctx_.allocator();
    ForwardBuffers f;
    if (z_.bias > 0) f.bias = Buffer<uint8_t>(a, z_.bias, "additive mask");
    f.scores = Buffer<uint8_t>(a, z_.scores, "scores S");
    f.probs = Buffer<uint8_t>(a, z_.probs, "probs P");
    return f;
  }

  // cublasSetStream resets a user workspace, so the workspace is set after it, every run.
  void bindCublas() {
    ATTNSCOPE_CUBLAS_CHECK(cublasSetStream(handle_, stream_.get()));
    ATTNSCOPE_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), static_cast<size_t>(workspace_.bytes())));
  }

  void forwardChunks(ForwardBuffers& f) {
    for (int64_t q0 = 0; q0 < spec_.seq_q; q0 += z_.chunk_rows) {
      const int64_t rows = std::min(z_.chunk_rows, spec_.seq_q - q0);
      if (f.bias) maskToBias(f.bias.data(), q0, rows);
      rowsByKeysGemm(in_.q.data(), in_.k.data(), f.scores.data(), scale(), q0, rows);
      softmax(f.scores.data(), f.probs.data(), f.bias ? f.bias.data() : nullptr, q0, rows);
      scoresByValuesGemm(f.probs.data(), in_.v.data(), o_.data(), 1.f, q0, rows);
    }
  }

  // Forward, then (checkpoint = attention: the forward again, inside "recompute") the backward
  // from the kept P. Timed from the first kernel to the last, allocations included.
  double runTrain() {
    bindCublas();
    const bool checkpoint = spec_.checkpoint == Checkpoint::attention;
    stream_.startTimer();
    Buffer<uint8_t> probs = trainForward(!checkpoint);
    if (checkpoint) {
      PhaseScope phase(ctx_, "recompute");
      probs = trainForward(true);
    }
    backward(probs);
    return stream_.stopTimer();
  }

  // Returns P when keep is set, else frees it with S and the additive mask.
  Buffer<uint8_t> trainForward(bool keep) {
    ctx_.throwIfCancelled();
    PhaseScope phase(ctx_, "attention");
    ForwardBuffers f = allocateForward();
    forwardChunks(f);
    stream_.synchronize();
    if (!keep) return {};
    return std::move(f.probs);
  }

  // dS (allocated here, first holding dP), then dQ, dK, dV; frees dS and P.
  void backward(Buffer<uint8_t>& probs) {
    const int64_t Lq = spec_.seq_q;
    Buffer<uint8_t> ds;
    {
      ctx_.throwIfCancelled();
      PhaseScope phase(ctx_, "backward dS");
      ds = Buffer<uint8_t>(ctx_.allocator(), trainSizes(spec_).ds, kDsBufferName);
      rowsByKeysGemm(grads_.g.data(), in_.v.data(), ds.data(), 1.f, 0, Lq);  // dP = dO V^T
      softmaxBackward(probs.data(), ds.data());
      stream_.synchronize();
    }
    {
      ctx_.throwIfCancelled();
      PhaseScope phase(ctx_, "backward dQ");
      scoresByValuesGemm(ds.data(), in_.k.data(), grads_.dq.data(), scale(), 0, Lq);  // dQ = scale dS K
      stream_.synchronize();
    }
    {
      ctx_.throwIfCancelled();
      PhaseScope phase(ctx_, "backward dK dV");
      keyRowsGemm(ds.data(), in_.q.data(), grads_.dk.data(), scale());       // dK = scale dS^T Q
      keyRowsGemm(probs.data(), grads_.g.data(), grads_.dv.data(), 1.f);  // dV = P^T dO
      stream_.synchronize();
    }
    ds.reset();
    probs.reset();
  }

  void maskToBias(void* bias, int64_t q0, int64_t rows) {
    MaskToBiasParams p;
    p.mask = in_.mask.data();
    p.bias = bias;
    p.planes = spec_.mask_layout == MaskLayout::per_head ? spec_.batch * spec_.heads : 1;
    p.rows = rows;
    p.row0 = q0;
    p.seq_q = spec_.seq_q;
    p.seq_kv = spec_.seqKv();
    p.dtype = elemType(spec_.dtype);
    launchMaskToBias(p, stream_.get());
  }

  // One cublasGemmStridedBatchedEx per description (math_gemms.h), operands in the input type.
  void gemm(const GemmCall& c, const void* a, const void* b, void* out) {
    const float beta = 0.f;
    const cudaDataType_t t = cudaType(spec_.dtype);
    const auto* a8 = static_cast<const uint8_t*>(a) + c.a_offset * eb();
    const auto* b8 = static_cast<const uint8_t*>(b) + c.b_offset * eb();
    auto* c8 = static_cast<uint8_t*>(out) + c.c_offset * eb();
    ATTNSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle_, c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(c.m),
        static_cast<int>(c.n), static_cast<int>(c.k), &c.alpha, a8, t, static_cast<int>(c.lda), c.stride_a, b8, t,
        static_cast<int>(c.ldb), c.stride_b, &beta, c8, t, static_cast<int>(c.ldc), c.stride_c,
        static_cast<int>(c.batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // S = scale Q K^T; dP = dO V^T (q_like Q's layout, k_like K's, out a chunk of scores).
  void rowsByKeysGemm(const void* q_like, const void* k_like, void* out, float alpha, int64_t q0, int64_t rows) {
    for (const GemmCall& c : rowsByKeysCalls(spec_, q0, rows, alpha)) gemm(c, k_like, q_like, out);
  }

  // O = P V; dQ = scale dS K (scores a chunk, k_like K's layout, out Q's).
  void scoresByValuesGemm(const void* scores, const void* k_like, void* out, float alpha, int64_t q0, int64_t rows) {
    for (const GemmCall& c : scoresByValuesCalls(spec_, q0, rows, alpha)) gemm(c, k_like, scores, out);
  }

  // dK = scale dS^T Q; dV = P^T dO, summed over the group (scores every query, q_like Q's layout).
  void keyRowsGemm(const void* scores, const void* q_like, void* out, float alpha) {
    gemm(keyRowsCall(spec_, alpha), q_like, scores, out);
  }

  void softmax(const void* scores, void* probs, const void* bias, int64_t q0, int64_t rows) {
    SoftmaxParams p;
    p.scores = scores;
    p.probs = probs;
    p.bias = bias;
    p.bias_plane_stride = spec_.mask_layout == MaskLayout::per_head ? rows * spec_.seqKv() : 0;
    p.batch = static_cast<int>(spec_.batch);
    p.heads = static_cast<int>(spec_.heads);
    p.rows = rows;
    p.row0 = q0;
    p.seq_q = spec_.seq_q;
    p.seq_kv = spec_.seqKv();
    p.dtype = elemType(spec_.dtype);
    p.mask_kind = static_cast<int>(tileMask(spec_.mask.kind));
    p.mask_width = spec_.mask.width;
    launchMaskedSoftmax(p, stream_.get());
  }

  void softmaxBackward(const void* probs, void* ds) {
    SoftmaxBackwardParams p;
    p.probs = probs;
    p.ds = ds;
    p.o = o_.data();
    p.g = grads_.g.data();
    p.batch = static_cast<int>(spec_.batch);
    p.heads = static_cast<int>(spec_.heads);
    p.seq_q = spec_.seq_q;
    p.seq_kv = spec_.seqKv();
    p.head_dim = spec_.headDim();
    p.dtype = elemType(spec_.dtype);
    launchSoftmaxBackward(p, stream_.get());
  }

  WorkloadSpec spec_;
  RunContext& ctx_;
  cublasHandle_t handle_;
  MaterialisingSizes z_;
  CudaStream stream_;  // declared before the buffers: they are freed first
  DeviceInputs in_;
  Buffer<uint8_t> o_, workspace_;
  DeviceGradients grads_;
};

}  // namespace

CudaMathBackend::CudaMathBackend(bool chunked, int64_t chunk_rows, int64_t chunk_score_budget)
    : chunked_(chunked),
      chunk_rows_(chunk_rows),
      chunk_budget_(chunk_score_budget) {}

CudaMathBackend::~CudaMathBackend() {
  if (handle_) cublasDestroy(handle_);
}

std::string CudaMathBackend::description() const {
  if (!chunked_)
    return "materialising path: S = QK^T (cuBLAS), softmax kernel, O = PV; S and P are full [B,H,Lq,Lkv] tensors "
           "(train: P kept, dS = P * (dP - delta) another)";
  if (chunk_rows_ > 0)
    return "cuda.math over chunks of " + std::to_string(chunk_rows_) + " query rows; memory grows with chunk x Lkv";
  return "cuda.math over chunks of query rows, each chunk's scores within " + formatBytes(chunk_budget_) +
         "; memory grows with chunk x Lkv";
}

int64_t CudaMathBackend::chunkRows(const WorkloadSpec& spec) const {
  return chunked_ ? chooseChunkRows(spec, chunk_rows_, chunk_budget_) : spec.seq_q;
}

MemoryPlan CudaMathBackend::plan(const WorkloadSpec& spec) const {
  if (spec.kind == WorkloadKind::layer) return MemoryPlan::unknown("kind layer is not implemented on CUDA");
  if (spec.pass == Pass::train) {
    if (chunked_) return MemoryPlan::unknown("cuda.chunked runs the forward only");
    return planMathTrain(spec);
  }
  return planMaterialising(spec, chunkRows(spec));
}

std::vector<std::string> CudaMathBackend::specProblems(const WorkloadSpec& spec) const {
  std::vector<std::string> why = cublasShapeProblems(spec);
  if (chunked_ && spec.pass == Pass::train)
    why.push_back("pass train is implemented by cuda.math and cuda.flash; cuda.chunked runs the forward only");
  return why;
}

cublasHandle_t CudaMathBackend::handle() {
  std::lock_guard lock(mu_);
  if (!handle_) ATTNSCOPE_CUBLAS_CHECK(cublasCreate(&handle_));
  return handle_;
}

std::unique_ptr<Execution> CudaMathBackend::prepare(const WorkloadSpec& spec, const HostInputs& inputs,
                                                    RunContext& ctx) {
  requireDevice();
  return std::make_unique<MathExecution>(spec, inputs, ctx, handle(), chunkRows(spec));
}

}  // namespace attnscope::cuda
