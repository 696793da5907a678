#pragma once
// What cpu.reference and cpu.flash share: the host device, the host allocator, the support
// rules, the thread pool, and the copy of a run's inputs into tracked buffers.

#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "kernels/cpu/task_pool.h"

namespace attnscope::cpu {

// The inputs and output of one run in tracked buffers, stored in the spec's dtype. Allocated in
// the order q, k, v, mask (dense and additive masks only; additive in mask_dtype), o, and for pass = train g (dO), dq, dk, dv; each
// plan lists them under these names.
struct RunTensors {
  Buffer<uint8_t> q, k, v, mask, o;
  Buffer<uint8_t> g, dq, dk, dv;  // pass = train only

  // Copies the inputs into buffers from ctx's allocator, in slices between which it checks the
  // cancel flag (hundreds of MiB take a while on a loaded machine); throws std::invalid_argument
  // when they do not match the spec.
  static RunTensors allocate(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx);
};

// The checks and the sliced copy RunTensors::allocate uses, for a layer's inputs too: throws
// std::invalid_argument when `t` is not `elements` values of `dtype`.
void checkInputTensor(const char* name, const HostTensor& t, DType dtype, int64_t elements);
Buffer<uint8_t> copyToBuffer(RunContext& ctx, const std::vector<uint8_t>& bytes, const char* tag);
// The mask tensor: throws std::invalid_argument when a dense or additive mask does not match the
// spec (size; an additive mask's dtype is maskDType()); copyMask puts it in the "mask" buffer
// (an empty buffer when the mask is not a tensor).
void checkMaskInput(const WorkloadSpec& spec, const HostInputs& inputs);
Buffer<uint8_t> copyMask(RunContext& ctx, const WorkloadSpec& spec, const HostInputs& inputs);

// Adds q, k, v, mask (dense and additive only), o (and g, dq, dk, dv for train), live over steps [first, last].
void planRunTensors(MemoryPlan& plan, const WorkloadSpec& spec, int first, int last);

// O ([B, H, Lq, D] in the spec's dtype) as float.
void outputAsFloat(const WorkloadSpec& spec, const Buffer<uint8_t>& o, std::vector<float>& out);
// dq, dk, dv as float (false for a forward pass).
bool gradientsAsFloat(const WorkloadSpec& spec, const RunTensors& t, AttentionGradients& out);

// The attention at the heart of a run: the backend's own algorithm on the tensors of a
// RunTensors (kind attention: copies of the run's inputs; kind layer: the layer's q, k, v split
// into heads, cpu_layer.h). A run's forward calls forward(); a train pass then backward().
class AttentionCore {
 public:
  virtual ~AttentionCore() = default;
  // Writes t.o; keeps what the backward reads when `keep` (a train pass without checkpointing, or
  // a layer's recompute under checkpoint = layer).
  virtual void forward(bool keep) = 0;
  // What a run's own forward keeps: a train pass without checkpoint attention. (checkpoint layer
  // keeps nothing in the forward; its layers' recompute does.)
  static bool keepsInForward(const WorkloadSpec& s) { return s.pass == Pass::train && s.checkpoint == Checkpoint::none; }
  // pass = train: under checkpoint = attention first runs the forward again (a "recompute"
  // phase), then writes t.dq, t.dk, t.dv from t.g, and frees what the forward kept.
  virtual void backward() = 0;
};

// Buffers of a plan whose last step is known only once every step is: kept from the forward to
// the end of the attention's backward (cpu.reference's P), or allocated at prepare and freed
// with the execution (the run's tensors, cpu.flash's lse).
struct PlanTails {
  std::vector<size_t> to_backward_end;
  std::vector<size_t> to_run_end;
  // Sets the last step of the buffers listed in `which` (and clears the list).
  static void close(MemoryPlan& plan, std::vector<size_t>& which);
};

class CpuBackend : public Backend {
 public:
  // pool: shared by the CPU backends of one registry; nullptr makes a private one with
  // hardware_concurrency threads.
  explicit CpuBackend(std::shared_ptr<TaskPool> pool);

  std::string device() const override { return "cpu"; }
  Availability availability() const override { return {}; }
  Support support(const WorkloadSpec& spec) const override;
  int64_t memoryAvailable() const override { return hostMemoryAvailable(); }
  std::unique_ptr<TrackingAllocator> makeAllocator() const override;
  // Both kinds: kind attention runs the core on the inputs; kind layer wraps it in the
  // projections (cpu_layer.h). Steps: "inputs", then the core's (and the layer's) steps.
  MemoryPlan plan(const WorkloadSpec& spec) const final;
  std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) final;

  int threads() const { return pool_->threads(); }

  // The backend's attention on `t` (which must outlive it). May allocate what lives as long as
  // the execution (cpu.flash: lse).
  virtual std::unique_ptr<AttentionCore> makeCore(const WorkloadSpec& spec, RunTensors& t, RunContext& ctx) const = 0;
  // What makeCore allocates (it lives as long as the execution: cpu.flash's lse).
  virtual void planCoreState(MemoryPlan& /*plan*/, const WorkloadSpec& /*spec*/, PlanTails& /*tails*/) const {}
  // The core's forward steps and buffers (keep: as forward(keep), what it keeps lives to the end of
  // its backward), and its backward's (checkpoint = attention: the recompute included).
  virtual void planCoreForward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails, bool keep) const = 0;
  virtual void planCoreBackward(MemoryPlan& plan, const WorkloadSpec& spec, PlanTails& tails) const = 0;

 protected:
  std::shared_ptr<TaskPool> pool_;
};

}  // namespace attnscope::cpu
