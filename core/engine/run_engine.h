#pragma once
// Runs one (spec, backend) point: preflight (spec, support, plan, budget, memory guard), execute
// (inputs, prepare, warm up, repeat), collect (trace, accuracy), and turns every failure into a
// status instead of an exception.

#include <atomic>
#include <vector>

#include "core/backend/backend.h"
#include "core/check/check_policy.h"
#include "core/inputs/host_inputs.h"
#include "core/result/run_result.h"
#include "core/trace/trace_capture.h"

namespace attnscope {

// Largest --reps and --warmup: one timing sample per repetition is kept, so this bounds them.
inline constexpr int kMaxReps = 100000;
// Forward passes (warm-up and timed together) whose trace events are kept in full; later passes
// are timed, and their events counted and dropped, so a run's trace stays bounded.
inline constexpr int kTracedPasses = 8;

struct RunOptions {
  int warmup = 1;
  // Beyond `warmup`, more warm-up passes until they have taken this long together (bench_cpu:
  // a short point timed right after the machine sat idle, or after torch's turn, ran slow). 0: none.
  double warmup_seconds = 0;
  int reps = 3;
  CheckMode check = CheckMode::automatic;  // core/check/check_policy.h; off: stored as not checked
  int64_t memory_budget = -1;       // predicted peak above it: status skipped. -1: none
  bool guard_memory = true;         // predicted peak above available memory: status oom
  // The run's allocator refuses what would take it past this many live bytes (status oom), as a
  // device of that size would: `frontier --verify` holds the budget for real. -1: none. Only what
  // goes through the allocator counts (an out-of-process backend's memory does not).
  int64_t allocator_limit = -1;
  const std::atomic<bool>* cancel = nullptr;
  const HostInputs* inputs = nullptr;  // nullptr: generated from the spec's seed
  std::vector<float>* output = nullptr;  // when set, receives O ([B,H,Lq,D] float)
  HostInputs* generated_inputs = nullptr;  // when set, receives the inputs runPoint generated
  AttentionGradients* gradients = nullptr;  // when set, receives a train pass's dQ, dK, dV (float)
  std::vector<LayerGradients>* layer_gradients = nullptr;  // kind = layer: per layer, dx and the weights' gradients
  TraceCapture* capture = nullptr;
  PhaseListener* phase_listener = nullptr;
};

// The point's flops as runs report them (RunResult::flops): the forward, a train pass's backward
// as 2.5 forwards, a layer's projections.
double pointFlops(const WorkloadSpec& spec);

// The checks that allocate nothing: spec, support, plan (predicted also for points that do not
// run, when the plan can be made), budget, and the memory guard, which counts the device plan,
// the host inputs runPoint would generate (none when options.inputs is set) and the output copy
// against the memory available (cgroup and rlimit limits included). Status ok: runPoint may run it.
RunResult preflight(Backend& backend, const WorkloadSpec& spec, const RunOptions& options);

RunResult runPoint(Backend& backend, const WorkloadSpec& spec, const RunOptions& options);

}  // namespace attnscope
