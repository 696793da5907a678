#pragma once
// Chrome trace format export (the JSON that Perfetto UI and chrome://tracing open).
//
// Layout, chosen so a sweep stays one file that compares runs side by side:
// - one process (pid 1, 2, ...) per run, in the order given, named by TraceRun::label (backend and
//   spec summary) and sorted in that order;
// - inside a run, thread 1 "phases" holds the phase ranges as complete ("X") events (nested phases
//   stack); then one thread per (source, device, stream) holding kernels, copies and sets as "X"
//   events, named "cuda:D stream S" for CUPTI events and "cpu thread S" for host ones;
// - memory as counter ("C") events: one counter per (source, memory kind), e.g.
//   "live bytes (cupti, device)", with the live bytes after every alloc/free as computed by
//   MemoryTimeline (so equal-timestamp ties follow its rule), and "pool reserved (cupti)" where
//   pools are used;
// - timestamps in microseconds (fractional, so nanoseconds survive) relative to each run's own
//   first event, so every run starts at 0 and runs line up for comparison.
// Event args carry the details: grid, block, registers, shared memory, bytes, correlation id.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace_event.h"

namespace attnscope {

struct RunResult;

struct TraceRun {
  std::string label;  // process name, e.g. "cuda.flash  B1 H16 L4096 D64 fp16 causal"
  std::vector<TraceEvent> events;
};

// A label for a run: "<backend> <spec summary>" (id appended when stored).
std::string traceRunLabel(const RunResult& r);
TraceRun traceRunOf(const RunResult& r);

// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}
nlohmann::json chromeTrace(const std::vector<TraceRun>& runs);

}  // namespace attnscope
