#pragma once
// Terse constructors for trace events in tests.
#include <string>

#include "core/trace/trace_event.h"

namespace attnscope::testing {

inline TraceEvent memEvent(EventKind kind, int64_t t, uint64_t address, int64_t bytes,
                           EventSource source = EventSource::allocator, MemoryKind memory = MemoryKind::device) {
  TraceEvent e;
  e.kind = kind;
  e.source = source;
  e.memory = memory;
  e.start_ns = e.end_ns = t;
  e.address = address;
  e.bytes = bytes;
  return e;
}
inline TraceEvent alloc(int64_t t, uint64_t address, int64_t bytes, EventSource source = EventSource::allocator,
                        MemoryKind memory = MemoryKind::device) {
  return memEvent(EventKind::alloc, t, address, bytes, source, memory);
}
inline TraceEvent release(int64_t t, uint64_t address, int64_t bytes = 0, EventSource source = EventSource::allocator,
                          MemoryKind memory = MemoryKind::device) {
  return memEvent(EventKind::free, t, address, bytes, source, memory);
}
inline TraceEvent phase(const std::string& name, int64_t start, int64_t end) {
  TraceEvent e;
  e.kind = EventKind::phase;
  e.source = EventSource::host;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}
inline TraceEvent activity(EventKind kind, const std::string& name, int64_t start, int64_t end, uint32_t stream,
                           EventSource source = EventSource::cupti) {
  TraceEvent e;
  e.kind = kind;
  e.source = source;
  e.memory = MemoryKind::device;
  e.name = name;
  e.start_ns = start;
  e.end_ns = end;
  e.stream = stream;
  return e;
}

}  // namespace attnscope::testing
