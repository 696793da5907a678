#pragma once
// Per-phase breakdown of a run from its trace, for `attnscope show ID --phases` and the views:
// where time and memory go (qkv_proj, scores, softmax, output, the backward's steps, ...).
//
// Phases are the backends' host-timed ranges (RunContext::beginPhase), one event per occurrence:
// "inputs" once (prepare), the others once per traced pass (warm-up and repetitions, at most
// kTracedPasses). Rows group occurrences by name, in tree order: top-level names in the order they
// first start, each followed by the phases inside it (in the order they first start). A phase
// inside another is named by its path ("recompute/scores": cpu.reference's checkpoint recomputes
// scores, softmax and output inside "recompute"), has a depth > 0 and counts in its own row and
// in its parent's; shares are of the top-level phases' total, so the top-level rows add up to 100 %. Peak memory is the most bytes live at any
// moment inside any occurrence, carried-in buffers included (MemoryTimeline's phase peaks), from
// the allocator's events, or CUPTI's device memory when the trace has no allocator events.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/trace/trace_event.h"

namespace attnscope {

struct PhaseStats {
  std::string name;       // "scores", or "recompute/scores" for a phase inside another
  int depth = 0;          // 0: not inside another phase
  int64_t count = 0;      // occurrences in the trace
  int64_t total_ns = 0;   // summed over the occurrences
  double share = 0;       // total_ns / the top-level phases' summed total_ns (0..1)
  int64_t peak_bytes = 0; // most bytes live inside any occurrence
  int64_t meanNs() const { return count > 0 ? total_ns / count : 0; }
};

std::vector<PhaseStats> summarizePhases(const std::vector<TraceEvent>& events);

// Several runs side by side (a sweep's points, one stacked bar each): the top-level phase names in
// the order they first appear across the runs, and for each run its row per name (nullopt where
// that run has no such phase, e.g. cpu.flash has no "softmax"). Nested phases stay in the runs'
// own summaries; their time is inside their parent's cell here.
struct PhaseMatrix {
  std::vector<std::string> names;
  std::vector<std::vector<std::optional<PhaseStats>>> cells;  // cells[run][name]
};
PhaseMatrix phaseMatrix(const std::vector<std::vector<PhaseStats>>& runs);

// [{"name", "depth", "count", "total_ns", "mean_ns", "share", "peak_bytes"}, ...]
nlohmann::json toJson(const std::vector<PhaseStats>& phases);

}  // namespace attnscope
