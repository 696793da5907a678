#include "kernels/torch/torch_trace.h"

#include <limits>

namespace attnscope::torch {

std::vector<TraceEvent> traceFromWorker(const WorkerReply& reply, const char* key, size_t max_events) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMaxTraceDevice = 1023;
  const nlohmann::json& events = reply.array(key, max_events);
  std::vector<TraceEvent> out;
  out.reserve(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    const WorkerReply j = reply.item(events[i], std::string(key) + "[" + std::to_string(i) + "]");
    const std::string k = j.text("k", "", 16);
    TraceEvent e;
    e.start_ns = j.integer("s", 0, kMax, 0);
    e.end_ns = j.integer("e", e.start_ns, kMax, e.start_ns);  // an event does not end before it starts
    e.name = j.text("n");
    // tp: the rank that recorded it (one process per rank; its addresses are its own).
    e.device = static_cast<uint32_t>(j.integer("dev", 0, kMaxTraceDevice, 0));
    if (k == "phase") {
      e.kind = EventKind::phase;
      e.source = EventSource::host;
    } else if (k == "kernel" || k == "memcpy" || k == "memset") {
      e.kind = k == "kernel" ? EventKind::kernel : k == "memcpy" ? EventKind::memcpy : EventKind::memset;
      const bool gpu = j.flag("g", false);
      // GPU kernels come from the profiler's CUPTI collection; CPU ops are host compute regions.
      e.source = gpu ? EventSource::cupti : EventSource::host;
      e.memory = gpu ? MemoryKind::device : MemoryKind::host;
      e.stream = static_cast<uint32_t>(j.integer("t", 0, std::numeric_limits<uint32_t>::max(), 0));
    } else if (k == "alloc" || k == "free") {
      e.kind = k == "alloc" ? EventKind::alloc : EventKind::free;
      e.source = EventSource::allocator;
      e.memory = j.integer("d", 0, 255, 0) == 0 ? MemoryKind::host : MemoryKind::device;
      e.bytes = j.integer("b", 0, kMax, 0);
      e.address = static_cast<uint64_t>(j.integer("a", 0, kMax, 0));
      e.end_ns = e.start_ns;
    } else {
      continue;  // a newer worker's event kind: skip rather than misdraw
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace attnscope::torch
