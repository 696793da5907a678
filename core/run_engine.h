#pragma once
// Runs one (spec, backend) point: guard memory, prepare, warm up, repeat, check accuracy, and
// turn every failure into a status instead of an exception.

#include <atomic>
#include <vector>

#include "core/backend.h"
#include "core/host_inputs.h"
#include "core/run_result.h"
#include "core/trace_capture.h"

namespace attnscope {

struct RunOptions {
  int warmup = 1;
  int reps = 3;
  bool check_accuracy = true;
  int64_t memory_budget = -1;       // predicted peak above it: status skipped. -1: none
  bool guard_memory = true;         // predicted peak above available memory: status oom
  const std::atomic<bool>* cancel = nullptr;
  const HostInputs* inputs = nullptr;  // nullptr: generated from the spec's seed
  std::vector<float>* output = nullptr;  // when set, receives O ([B,H,Lq,D] float)
  TraceCapture* capture = nullptr;
  PhaseListener* phase_listener = nullptr;
};

RunResult runPoint(Backend& backend, const WorkloadSpec& spec, const RunOptions& options);

}  // namespace attnscope
