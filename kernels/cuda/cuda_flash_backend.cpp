#include "kernels/cuda/cuda_flash_backend.h"

#include <stdexcept>

#include "kernels/cuda/attention_tiling.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_plans.h"
#include "kernels/cuda/cuda_stream.h"
#include "kernels/cuda/flash_layout.h"

namespace attnscope::cuda {
namespace {

static_assert(static_cast<int>(MaskKind::causal) == static_cast<int>(TileMask::causal) &&
                  static_cast<int>(MaskKind::window) == static_cast<int>(TileMask::window) &&
                  static_cast<int>(MaskKind::block) == static_cast<int>(TileMask::block) &&
                  static_cast<int>(MaskKind::dense) == static_cast<int>(TileMask::dense),
              "TileMask mirrors MaskKind");

class FlashExecution final : public Execution {
 public:
  FlashExecution(const WorkloadSpec& spec, const HostInputs& in, RunContext& ctx)
      : spec_(spec), ctx_(ctx), z_(flashSizes(spec)) {
    if (auto problem = flashHeadDimProblem(spec.headDim())) throw std::invalid_argument(*problem);
    PhaseScope phase(ctx, "inputs");
    TrackingAllocator& a = ctx.allocator();
    in_ = uploadInputs(a, in, z_.q, z_.k, z_.v, z_.mask, stream_);
    o_ = Buffer<uint8_t>(a, z_.o, "o");
    lse_ = Buffer<float>(a, z_.lse / 4, "log-sum-exp");
    if (spec.pass == Pass::train) grads_ = allocateGradients(a, spec, in, stream_);
    params_ = makeParams();
  }

  double run() override {
    ctx_.throwIfCancelled();
    if (spec_.pass == Pass::train) return runTrain();
    PhaseScope phase(ctx_, "attention");
    stream_.startTimer();
    launchFlashForward(params_, stream_.get());
    return stream_.stopTimer();
  }

  void output(std::vector<float>& out) override {
    downloadAsFloat(o_.data(), spec_.qElements(), spec_.dtype, out, stream_);
  }
  bool gradients(AttentionGradients& out) override { return downloadGradients(spec_, grads_, out, stream_); }

 private:
  // The forward saves O and the log-sum-exp, all the backward reads. checkpoint = attention runs
  // the forward again inside "recompute" (as torch.utils.checkpoint would), which costs a forward
  // and saves nothing here. Each phase waits for its kernels so the host-timed phases hold them.
  double runTrain() {
    stream_.startTimer();
    phase("attention", [&] { launchFlashForward(params_, stream_.get()); });
    if (spec_.checkpoint == Checkpoint::attention) {
      PhaseScope recompute(ctx_, "recompute");
      phase("attention", [&] { launchFlashForward(params_, stream_.get()); });
    }
    FlashBwdParams bp;
    bp.fwd = params_;
    bp.g = grads_.g.data();
    bp.dq = grads_.dq.data();
    bp.dk = grads_.dk.data();
    bp.dv = grads_.dv.data();
    phase("backward dK dV", [&] { launchFlashBackwardKeys(bp, stream_.get()); });
    phase("backward dQ", [&] { launchFlashBackwardQueries(bp, stream_.get()); });
    return stream_.stopTimer();
  }

  template <typename Launch>
  void phase(const char* name, Launch launch) {
    ctx_.throwIfCancelled();
    PhaseScope scope(ctx_, name);
    launch();
    stream_.synchronize();
  }

  FlashParams makeParams() const {
    FlashParams p = flashParams(spec_);
    p.q = in_.q.data();
    p.k = in_.k.data();
    p.v = in_.v.data();
    p.o = o_.data();
    p.lse = lse_.data();
    if (in_.mask) p.mask = in_.mask.data();
    return p;
  }

  WorkloadSpec spec_;
  RunContext& ctx_;
  FlashSizes z_;
  CudaStream stream_;  // declared before the buffers: they are freed first
  DeviceInputs in_;
  Buffer<uint8_t> o_;
  Buffer<float> lse_;
  DeviceGradients grads_;
  FlashParams params_;
};

}  // namespace

std::string CudaFlashBackend::description() const {
  return "fused FlashAttention-style kernel (mma.sync tensor cores for fp16/bf16, SIMT fp32); memory linear in "
         "sequence length (train: FA2 backward from O and the log-sum-exp, dQ in a second kernel)";
}

MemoryPlan CudaFlashBackend::plan(const WorkloadSpec& spec) const {
  if (spec.kind == WorkloadKind::layer) return MemoryPlan::unknown("kind layer is not implemented on CUDA");
  if (spec.pass == Pass::train) return planFlashTrain(spec);
  return planFlash(spec);
}

std::unique_ptr<Execution> CudaFlashBackend::prepare(const WorkloadSpec& spec, const HostInputs& inputs,
                                                     RunContext& ctx) {
  requireDevice();
  return std::make_unique<FlashExecution>(spec, inputs, ctx);
}

}  // namespace attnscope::cuda
