#include "kernels/cuda/cuda_math_backend.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/format.h"
#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_stream.h"

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

class MathExecution final : public Execution {
 public:
  MathExecution(const WorkloadSpec& spec, const HostInputs& in, RunContext& ctx, cublasHandle_t handle,
                int64_t chunk_rows)
      : spec_(spec), ctx_(ctx), handle_(handle), z_(materialisingSizes(spec, chunk_rows)) {
    PhaseScope phase(ctx, "inputs");
    TrackingAllocator& a = ctx.allocator();
    DeviceInputs d = uploadInputs(a, in, z_.q, z_.k, z_.v, z_.mask, stream_);
    q_ = std::move(d.q);
    k_ = std::move(d.k);
    v_ = std::move(d.v);
    mask_ = std::move(d.mask);
    o_ = Buffer<uint8_t>(a, z_.o, "o");
    workspace_ = Buffer<uint8_t>(a, z_.workspace, "cublas workspace");
  }

  double run() override {
    ctx_.throwIfCancelled();
    PhaseScope phase(ctx_, "forward");
    TrackingAllocator& a = ctx_.allocator();
    // Allocated per forward pass, as a framework would, but before the timer starts so that
    // cudaMalloc's host time is not counted as device time.
    Buffer<uint8_t> bias;
    if (z_.bias > 0) bias = Buffer<uint8_t>(a, z_.bias, "additive mask");
    Buffer<uint8_t> scores(a, z_.scores, "scores S");
    Buffer<uint8_t> probs(a, z_.probs, "probs P");
    // cublasSetStream resets a user workspace, so the workspace is set after it, every run.
    ATTNSCOPE_CUBLAS_CHECK(cublasSetStream(handle_, stream_.get()));
    ATTNSCOPE_CUBLAS_CHECK(cublasSetWorkspace(handle_, workspace_.data(), static_cast<size_t>(workspace_.bytes())));

    stream_.startTimer();
    for (int64_t q0 = 0; q0 < spec_.seq_q; q0 += z_.chunk_rows) {
      const int64_t rows = std::min(z_.chunk_rows, spec_.seq_q - q0);
      if (bias) maskToBias(bias.data(), q0, rows);
      scoresGemm(scores.data(), q0, rows);
      softmax(scores.data(), probs.data(), bias ? bias.data() : nullptr, q0, rows);
      outputGemm(probs.data(), q0, rows);
    }
    return stream_.stopTimer();
  }

  void output(std::vector<float>& out) override {
    downloadAsFloat(o_.data(), spec_.qElements(), spec_.dtype, out, stream_);
  }

 private:
  int64_t eb() const { return bytesPerElement(spec_.dtype); }

  void maskToBias(void* bias, int64_t q0, int64_t rows) {
    MaskToBiasParams p;
    p.mask = mask_.data();
    p.bias = bias;
    p.planes = spec_.mask_layout == MaskLayout::per_head ? spec_.batch * spec_.heads : 1;
    p.rows = rows;
    p.row0 = q0;
    p.seq_q = spec_.seq_q;
    p.seq_kv = spec_.seqKv();
    p.dtype = elemType(spec_.dtype);
    launchMaskToBias(p, stream_.get());
  }

  // The query rows of one kv group are contiguous when a chunk holds every query, so GQA costs
  // one GEMM per kv head (M = group x Lq); otherwise one strided GEMM per head of the group.
  // Either way K and V are read in place: no per-head copies.
  struct GroupCalls {
    int64_t calls;      // GEMMs per stage
    int64_t m;          // query rows per GEMM
  };
  GroupCalls groupCalls(int64_t rows) const {
    const int64_t group = spec_.heads / spec_.kvHeads();
    if (rows == spec_.seq_q) return {1, group * rows};
    return {group, rows};
  }

  // Row-major S[rows, Lkv] = scale * Q[rows, D] K[Lkv, D]^T is column-major S^T = K Q^T.
  void scoresGemm(void* scores, int64_t q0, int64_t rows) {
    const int64_t D = spec_.headDim(), Lq = spec_.seq_q, Lkv = spec_.seqKv();
    const int64_t group = spec_.heads / spec_.kvHeads();
    const GroupCalls gc = groupCalls(rows);
    const float alpha = static_cast<float>(spec_.effectiveScale()), beta = 0.f;
    const cudaDataType_t t = cudaType(spec_.dtype);
    for (int64_t r = 0; r < gc.calls; ++r) {
      const uint8_t* q = q_.data() + (r * Lq + q0) * D * eb();
      auto* s = static_cast<uint8_t*>(scores) + r * rows * Lkv * eb();
      ATTNSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(Lkv), static_cast<int>(gc.m), static_cast<int>(D), &alpha,
          k_.data(), t, static_cast<int>(D), Lkv * D, q, t, static_cast<int>(D), group * Lq * D, &beta, s, t,
          static_cast<int>(Lkv), group * rows * Lkv, static_cast<int>(spec_.batch * spec_.kvHeads()),
          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
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

  // Row-major O[rows, D] = P[rows, Lkv] V[Lkv, D] is column-major O^T = V^T P^T.
  void outputGemm(const void* probs, int64_t q0, int64_t rows) {
    const int64_t D = spec_.headDim(), Lq = spec_.seq_q, Lkv = spec_.seqKv();
    const int64_t group = spec_.heads / spec_.kvHeads();
    const GroupCalls gc = groupCalls(rows);
    const float alpha = 1.f, beta = 0.f;
    const cudaDataType_t t = cudaType(spec_.dtype);
    for (int64_t r = 0; r < gc.calls; ++r) {
      const auto* pr = static_cast<const uint8_t*>(probs) + r * rows * Lkv * eb();
      uint8_t* o = o_.data() + (r * Lq + q0) * D * eb();
      ATTNSCOPE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
          handle_, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(D), static_cast<int>(gc.m), static_cast<int>(Lkv), &alpha,
          v_.data(), t, static_cast<int>(D), Lkv * D, pr, t, static_cast<int>(Lkv), group * rows * Lkv, &beta, o, t,
          static_cast<int>(D), group * Lq * D, static_cast<int>(spec_.batch * spec_.kvHeads()), CUBLAS_COMPUTE_32F,
          CUBLAS_GEMM_DEFAULT));
    }
  }

  WorkloadSpec spec_;
  RunContext& ctx_;
  cublasHandle_t handle_;
  MaterialisingSizes z_;
  CudaStream stream_;  // declared before the buffers: they are freed first
  Buffer<uint8_t> q_, k_, v_, mask_, o_, workspace_;
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
    return "materialising path: S = QK^T (cuBLAS), softmax kernel, O = PV; S and P are full [B,H,Lq,Lkv] tensors";
  if (chunk_rows_ > 0)
    return "cuda.math over chunks of " + std::to_string(chunk_rows_) + " query rows; memory grows with chunk x Lkv";
  return "cuda.math over chunks of query rows, each chunk's scores within " + formatBytes(chunk_budget_) +
         "; memory grows with chunk x Lkv";
}

int64_t CudaMathBackend::chunkRows(const WorkloadSpec& spec) const {
  return chunked_ ? chooseChunkRows(spec, chunk_rows_, chunk_budget_) : spec.seq_q;
}

MemoryPlan CudaMathBackend::plan(const WorkloadSpec& spec) const {
  if (spec.pass == Pass::train || spec.kind == WorkloadKind::layer)
    return MemoryPlan::unknown("only the attention forward is implemented on CUDA");
  return planMaterialising(spec, chunkRows(spec));
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
