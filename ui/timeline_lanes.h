#pragma once
// The Timeline's lanes, laid out from a run's events without the widget (TimelineView draws them;
// tests/ui/test_timeline.cpp checks the layout on its own): which lanes there are, in which order,
// and the intervals each holds, sorted by start.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/trace_event.h"
#include "ui/chart_math.h"
#include "ui/phase_names.h"

namespace attnscope::ui {

// The forward passes of a run, for the Timeline's pass lane: inferred from the backend's phases,
// since the engine records none of its own. Top-level phases (inside no other) other than
// "inputs" belong to passes, and a pass starts where the run's first such phase name occurs
// again ("scores" for cpu.reference, "attention" for cpu.flash, "sdpa call" for torch). Setting up
// ("inputs", torch's "load inputs into torch") is no pass. The first `warmup` passes are
// "warm-up N", the next `reps` "rep N"; what follows them (torch's extra, profiled call, whose
// allocations are the memory curve) is one pass, "profiled call", as is a top-level phase of that
// name. reps < 0: unknown, every later pass is a rep. Empty without phases.
struct PassRange {
  enum class Kind { warmup, rep, profiled };
  std::string label;
  int64_t start_ns = 0, end_ns = 0;
  Kind kind = Kind::rep;
};
std::vector<PassRange> passRanges(const std::vector<TraceEvent>& events, int warmup, int reps = -1);

// One lane. Top to bottom: the passes (when the run has phases), one lane per phase name in the
// order the names first appear (a stack's layers L1..LN together in one, "layers", named on their
// slices), then one per (source, device, stream) of the kernels, copies and sets, in that order. A
// tensor-parallel run's phases, on several devices, go by rank instead, rank 0's first, four lanes
// at most each, named on their slices: "layers", "phases" (a layer's own, or the top-level ones),
// "↳ inside" (what those hold) and "comm". Allocations and frees have no lane (they are the memory curve and bands).
// Events of one stream that nest (torch's ops: scaled_dot_product_attention holding matmul holding
// bmm) go one row per nesting depth, as a flame graph, so the outer op does not hide the inner
// ones in one solid bar: depth 0 is what no other holds; from kMaxOpDepth - 1 on, one row.
inline constexpr int kMaxOpDepth = 4;
inline constexpr const char* kLayersLane = "layers";
struct LaneLayout {
  enum class Kind { passes, layers, phase, cpu_thread, cuda_stream };
  Kind kind = Kind::phase;
  // Kind::phase: the phase's name; a rank's lanes: "phases", "↳ inside" or "comm" (Kind::layers:
  // kLayersLane).
  std::string phase;
  bool comm = false;                // a phase lane of communication ("comm")
  bool ranked = false;              // a phase lane of one rank (device) of several: many names
  EventSource source = EventSource::host;
  // cuda_stream: the device and stream; cpu_thread: stream is the thread; a ranked phase lane: its
  // rank's device.
  uint32_t device = 0, stream = 0;
  int depth = 0;                    // cpu_thread, cuda_stream: the nesting depth of its events
  std::vector<Interval> intervals;  // sorted by start, ns relative to t0_ns
  std::vector<size_t> items;        // parallel: index into events (into passes for the pass lane)
};
std::vector<LaneLayout> layoutLanes(const std::vector<TraceEvent>& events, const std::vector<PassRange>& passes,
                                    int64_t t0_ns);

}  // namespace attnscope::ui
