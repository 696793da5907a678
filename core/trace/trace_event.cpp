#include "core/trace/trace_event.h"

namespace attnscope {

std::string_view toString(EventKind k) {
  switch (k) {
    case EventKind::kernel: return "kernel";
    case EventKind::memcpy: return "memcpy";
    case EventKind::memset: return "memset";
    case EventKind::alloc: return "alloc";
    case EventKind::free: return "free";
    case EventKind::pool_reserve: return "pool_reserve";
    case EventKind::pool_release: return "pool_release";
    case EventKind::phase: return "phase";
  }
  return "?";
}

std::string_view toString(EventSource s) {
  switch (s) {
    case EventSource::allocator: return "allocator";
    case EventSource::cupti: return "cupti";
    case EventSource::host: return "host";
  }
  return "?";
}

std::string_view toString(MemoryKind k) {
  switch (k) {
    case MemoryKind::host: return "host";
    case MemoryKind::device: return "device";
    case MemoryKind::pinned: return "pinned";
    case MemoryKind::managed: return "managed";
    case MemoryKind::pool: return "pool";
  }
  return "?";
}

}  // namespace attnscope
