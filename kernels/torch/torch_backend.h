#pragma once
// PyTorch's scaled_dot_product_attention as backends: torch.<device>.<kernel>, run by a worker in
// the user's own Python (python/attnscope_torch_worker.py). "auto" lets SDPA choose; the other
// kernels are forced (sdpa_kernel, or sdp_kernel before torch 2.3). kind layer is torch's own
// F.linear + that SDPA + F.linear (python/attnscope_torch_layer.py); pass train goes through
// autograd. Memory is measured by the worker (autograd's saved tensors included), and the outputs
// and gradients are checked by the engine like any backend's.
//
// The worker lives in a TorchSession shared by the torch backends of one registry: one worker
// per sweep (importing torch costs seconds), restarted after any failure so that a crash, a hang
// or a garbled answer costs one point, never the sweep.

#include <memory>
#include <string>

#include "core/backend/backend.h"
#include "kernels/torch/torch_probe.h"

namespace attnscope::torch {

class TorchSession {
 public:
  // The live worker, started (or adopted from the probe) when there is none. Throws
  // WorkerFailure with the reason torch cannot be used, or Cancelled.
  std::shared_ptr<TorchWorker> worker(const std::atomic<bool>* cancel);
  // Drops the worker after a failure; the next point starts a fresh one.
  void discard() { worker_.reset(); }

 private:
  std::shared_ptr<TorchWorker> worker_;
};

class TorchBackend final : public Backend {
 public:
  TorchBackend(std::string device, std::string kernel, std::shared_ptr<TorchSession> session)
      : device_(std::move(device)), kernel_(std::move(kernel)), session_(std::move(session)) {}

  std::string id() const override { return "torch." + device_ + "." + kernel_; }
  std::string device() const override { return device_ == "cuda" ? "cuda:0" : "cpu"; }
  std::string description() const override;
  Availability availability() const override;
  Support support(const WorkloadSpec& spec) const override;
  MemoryPlan plan(const WorkloadSpec& spec) const override;
  int64_t memoryAvailable() const override;
  std::unique_ptr<TrackingAllocator> makeAllocator() const override;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) override;

  const std::string& kernel() const { return kernel_; }
  bool onCuda() const { return device_ == "cuda"; }

 private:
  std::string device_;  // "cpu" or "cuda"
  std::string kernel_;  // "auto", "math", "flash", "efficient", "cudnn"
  std::shared_ptr<TorchSession> session_;
};

}  // namespace attnscope::torch
