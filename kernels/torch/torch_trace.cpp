#include "kernels/torch/torch_trace.h"

namespace attnscope::torch {

std::vector<TraceEvent> traceFromWorker(const nlohmann::json& events) {
  std::vector<TraceEvent> out;
  if (!events.is_array()) return out;
  out.reserve(events.size());
  for (const auto& j : events) {
    const std::string k = j.value("k", "");
    TraceEvent e;
    e.start_ns = j.value("s", int64_t{0});
    e.end_ns = j.value("e", e.start_ns);
    e.name = j.value("n", "");
    if (k == "phase") {
      e.kind = EventKind::phase;
      e.source = EventSource::host;
    } else if (k == "kernel" || k == "memcpy" || k == "memset") {
      e.kind = k == "kernel" ? EventKind::kernel : k == "memcpy" ? EventKind::memcpy : EventKind::memset;
      const bool gpu = j.value("g", false);
      // GPU kernels come from the profiler's CUPTI collection; CPU ops are host compute regions.
      e.source = gpu ? EventSource::cupti : EventSource::host;
      e.memory = gpu ? MemoryKind::device : MemoryKind::host;
      e.stream = j.value("t", 0u);
    } else if (k == "alloc" || k == "free") {
      e.kind = k == "alloc" ? EventKind::alloc : EventKind::free;
      e.source = EventSource::allocator;
      e.memory = j.value("d", 0) == 0 ? MemoryKind::host : MemoryKind::device;
      e.bytes = j.value("b", int64_t{0});
      e.address = j.value("a", uint64_t{0});
      e.end_ns = e.start_ns;
    } else {
      continue;  // a newer worker's event kind: skip rather than misdraw
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace attnscope::torch
