#pragma once
// What cpu.reference and cpu.flash share: the host device, the host allocator, the support
// rules, the thread pool, and the copy of a run's inputs into tracked buffers.

#include <memory>
#include <string>

#include "core/backend.h"
#include "kernels/cpu/task_pool.h"

namespace attnscope::cpu {

// The inputs and output of one run in tracked buffers, stored in the spec's dtype. Allocated in
// the order q, k, v, mask (dense masks only), o, and for pass = train g (dO), dq, dk, dv; each
// plan lists them under these names.
struct RunTensors {
  Buffer<uint8_t> q, k, v, mask, o;
  Buffer<uint8_t> g, dq, dk, dv;  // pass = train only

  // Copies the inputs into buffers from ctx's allocator, in slices between which it checks the
  // cancel flag (hundreds of MiB take a while on a loaded machine); throws std::invalid_argument
  // when they do not match the spec.
  static RunTensors allocate(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx);
};

// Adds q, k, v, mask (dense only), o (and g, dq, dk, dv for train), live over steps [first, last].
void planRunTensors(MemoryPlan& plan, const WorkloadSpec& spec, int first, int last);

// O ([B, H, Lq, D] in the spec's dtype) as float.
void outputAsFloat(const WorkloadSpec& spec, const Buffer<uint8_t>& o, std::vector<float>& out);
// dq, dk, dv as float (false for a forward pass).
bool gradientsAsFloat(const WorkloadSpec& spec, const RunTensors& t, AttentionGradients& out);

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

  int threads() const { return pool_->threads(); }

 protected:
  std::shared_ptr<TaskPool> pool_;
};

}  // namespace attnscope::cpu
