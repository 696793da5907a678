#pragma once
// The worker's profiler events (torch.profiler's ops, kernels and "[memory]" events, already on
// the host's monotonic clock) as AttnScope trace events, so the Timeline and the memory curve
// work for torch runs as for ours. Allocations are the torch allocator's: they carry
// EventSource::allocator like our own allocator's, and the memory kind of their device.

#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace_event.h"

namespace attnscope::torch {

std::vector<TraceEvent> traceFromWorker(const nlohmann::json& events);

}  // namespace attnscope::torch
