#pragma once
// The worker's profiler events (torch.profiler's ops, kernels and "[memory]" events, already on
// the host's monotonic clock) as AttnScope trace events, so the Timeline and the memory curve
// work for torch runs as for ours. Allocations are the torch allocator's: they carry
// EventSource::allocator like our own allocator's, and the memory kind of their device.

#include <vector>

#include "core/trace/trace_event.h"
#include "kernels/torch/worker_reply.h"

namespace attnscope::torch {

// The events listed under `key` of a reply: at most max_events, each field checked (a wrong one
// kills the worker and fails the point, naming the event and the field).
std::vector<TraceEvent> traceFromWorker(const WorkerReply& reply, const char* key, size_t max_events);

}  // namespace attnscope::torch
