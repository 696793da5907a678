#pragma once
// The backend interface. A backend may live in this process (CPU, CUDA) or drive another process
// (PyTorch through the user's Python, kernels/torch/); the engine only sees this interface.
//
// Life of one run, driven by RunEngine:
//   alloc = backend.makeAllocator();  RunContext ctx(*alloc, cancel);
//   exec = backend.prepare(spec, inputs, ctx);   // copies inputs into tracked buffers
//   exec->run() x (warm-up + repetitions);       // returns the device-measured seconds
//   exec->output(out);                           // O as float, [B, H, Lq, D] (kind layer: y [B, L, E])
//   exec.reset();                                // releases every buffer
// Every byte an in-process backend uses goes through ctx.allocator(), so the allocator's peak can
// be held against plan(spec).peakBytes(). A backend whose memory lives in another process cannot
// allocate through it: it reports its own measured peak and trace through the RunContext
// (reportMeasuredPeak, addMeasuredEvents), and those replace the allocator's. The same context
// carries facts about the run (setFact: e.g. which kernel PyTorch chose, torch's version) and the
// device's warnings (addWarning), kept even when the run fails.

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/cancel.h"
#include "core/inputs/host_inputs.h"
#include "core/backend/memory_plan.h"
#include "core/trace/trace_event.h"
#include "core/backend/tracking_allocator.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// Thrown by a backend whose device refused the run in a way that is not an error of ours, keeping
// the device's own words: PyTorch's "No available kernel. Aborting execution." for a forced
// kernel whose checks fail (status unsupported), or "CUDA out of memory. Tried to allocate ..."
// from torch's caching allocator (status oom, the requested size being known only to torch).
struct DeviceRefusal : std::runtime_error {
  enum class Kind { unsupported, oom };
  DeviceRefusal(Kind k, const std::string& message) : std::runtime_error(message), kind(k) {}
  Kind kind;
};

// Receives phase begin/end, e.g. to emit NVTX ranges for CUPTI. Optional.
class PhaseListener {
 public:
  virtual ~PhaseListener() = default;
  virtual void phaseBegin(std::string_view name) = 0;
  virtual void phaseEnd(std::string_view name) = 0;
};

class RunContext {
 public:
  RunContext(TrackingAllocator& allocator, const std::atomic<bool>* cancel = nullptr,
             PhaseListener* listener = nullptr)
      : alloc_(allocator), cancel_(cancel), listener_(listener) {}

  TrackingAllocator& allocator() { return alloc_; }
  bool cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  // For waits outside our own loops (e.g. on another process), which poll the flag themselves.
  const std::atomic<bool>* cancelFlag() const { return cancel_; }
  void throwIfCancelled() const {
    if (cancelled()) throw Cancelled();
  }

  // Records a phase range (host clock) and forwards it to the listener.
  void beginPhase(std::string_view name);
  void endPhase();
  std::vector<TraceEvent> takePhaseEvents() { return std::exchange(phases_, {}); }
  // While off, phases are counted instead of recorded (the engine keeps the trace bounded).
  void setRecording(bool on) { recording_ = on; }
  int64_t droppedPhases() const { return dropped_; }

  // Out-of-process backends: the peak (inputs and output included) and the trace as the other
  // process measured them. When a peak is reported it replaces the tracking allocator's.
  void reportMeasuredPeak(int64_t bytes) { measured_peak_ = bytes; }
  std::optional<int64_t> measuredPeak() const { return measured_peak_; }
  void addMeasuredEvents(std::vector<TraceEvent> events);
  std::vector<TraceEvent> takeMeasuredEvents() { return std::exchange(measured_events_, {}); }
  // Facts stored with the run (key -> value, e.g. "torch.ran" -> "math") and the device's
  // warnings, reported even when the run fails.
  void setFact(std::string key, std::string value) { facts_[std::move(key)] = std::move(value); }
  std::map<std::string, std::string> takeFacts() { return std::exchange(facts_, {}); }
  void addWarning(std::string text);
  std::vector<std::string> takeWarnings() { return std::exchange(warnings_, {}); }
  // Set by the engine when the accuracy check will ask for a layer's intermediates: a backend that
  // frees them during a run copies them out (in its first run) instead of keeping them.
  void setKeepIntermediates(bool on) { keep_intermediates_ = on; }
  bool keepIntermediates() const { return keep_intermediates_; }

 private:
  TrackingAllocator& alloc_;
  const std::atomic<bool>* cancel_;
  PhaseListener* listener_;
  std::vector<TraceEvent> phases_;
  std::vector<size_t> open_;  // kNotRecorded for a phase begun while not recording
  bool recording_ = true;
  int64_t dropped_ = 0;
  std::optional<int64_t> measured_peak_;
  std::vector<TraceEvent> measured_events_;
  std::map<std::string, std::string> facts_;
  std::vector<std::string> warnings_;
  bool keep_intermediates_ = false;
};

// RAII phase range.
class PhaseScope {
 public:
  PhaseScope(RunContext& ctx, std::string_view name) : ctx_(ctx) { ctx_.beginPhase(name); }
  ~PhaseScope() { ctx_.endPhase(); }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  RunContext& ctx_;
};

struct Availability {
  bool available = true;
  std::string reason;  // why not, e.g. "GPU backends unavailable: no CUDA-capable device is detected"
};

struct Support {
  std::vector<std::string> reasons;  // empty: supported
  // A remark for people when supported, e.g. for PyTorch "torch would pick math (flash: ...)".
  std::string note;
  bool ok() const { return reasons.empty(); }
};

class Execution {
 public:
  virtual ~Execution() = default;  // releases every buffer of the run
  // One forward pass. Returns the elapsed seconds as the backend's device measures them.
  // May throw Cancelled, OutOfMemory, or std::runtime_error with the device's error text.
  virtual double run() = 0;
  // The output O as float, [B, H, Lq, D] (kind layer: y, [B, L, E]), values rounded to the spec's dtype.
  virtual void output(std::vector<float>& out) = 0;
  // pass = train: dQ, dK, dV of the loss sum(O * G) as float, in Q's and K's layouts (GQA: dK and
  // dV summed over the query heads of a group). False when the execution computed none.
  virtual bool gradients(AttentionGradients& /*out*/) { return false; }
  // kind = layer, pass = train: per layer of the stack (one for layers = 1), dx and the weights'
  // gradients. False when none were computed.
  virtual bool layerGradients(std::vector<LayerGradients>& /*out*/) { return false; }
  // kind = layer: per layer, the intermediates of a run() (for the accuracy check; a backend may
  // keep those of its first run, RunContext::keepIntermediates). False when the execution cannot
  // give them.
  virtual bool layerIntermediates(std::vector<LayerIntermediates>& /*out*/) { return false; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string id() const = 0;           // "cpu.reference", "cuda.flash", ...
  virtual std::string device() const = 0;       // "cpu", "cuda:0"
  virtual std::string description() const = 0;  // one line for people
  virtual Availability availability() const = 0;
  // Reasons this backend cannot run the spec on this machine (availability included).
  // support() and plan() must stay cheap: the GUI calls them on every edit of the spec. A backend
  // that needs another process to answer probes it once and answers from the cached result.
  virtual Support support(const WorkloadSpec& spec) const = 0;
  // The predicted memory; MemoryPlan::unknown(reason) when the backend cannot predict it.
  virtual MemoryPlan plan(const WorkloadSpec& spec) const = 0;
  // Memory available to this backend's device right now, in bytes; -1 if unknown.
  virtual int64_t memoryAvailable() const = 0;
  virtual std::unique_ptr<TrackingAllocator> makeAllocator() const = 0;
  virtual std::unique_ptr<Execution> prepare(const WorkloadSpec& spec, const HostInputs& inputs,
                                             RunContext& ctx) = 0;
};

}  // namespace attnscope
