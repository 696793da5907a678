#pragma once
// The trace model: plain events with no CUDA or CUPTI types. The allocator, the CPU backends and
// the CUPTI adapter all produce these, and the store, the memory timeline, the exporters and the
// GUI consume them without caring who produced them.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope {

enum class EventKind : uint8_t {
  kernel,        // a device kernel (or a CPU compute region)
  memcpy,        // a copy; name says the direction ("HtoD", "DtoH", "DtoD", ...)
  memset,
  alloc,         // bytes become live at start_ns at `address`
  free,          // the allocation at `address` ends at start_ns
  pool_reserve,  // a memory pool grew its reservation by `bytes`
  pool_release,  // a memory pool released `bytes` of its reservation
  phase,         // a named range [start_ns, end_ns) of the run ("scores", "softmax", ...)
};

enum class EventSource : uint8_t { allocator, cupti, host };
enum class MemoryKind : uint8_t { host, device, pinned, managed, pool };

std::string_view toString(EventKind k);
std::string_view toString(EventSource s);
std::string_view toString(MemoryKind k);

struct KernelInfo {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  int32_t registers = 0;
  int32_t static_smem = 0;
  int32_t dynamic_smem = 0;
};

struct TraceEvent {
  EventKind kind = EventKind::phase;
  EventSource source = EventSource::host;
  MemoryKind memory = MemoryKind::host;
  int64_t start_ns = 0;
  int64_t end_ns = 0;  // == start_ns for instantaneous events (alloc, free)
  std::string name;    // kernel name, buffer tag, phase name, copy direction
  uint32_t stream = 0; // CUDA stream id, or CPU thread index
  uint32_t device = 0;
  int64_t bytes = 0;
  uint64_t address = 0;
  uint64_t correlation = 0;
  KernelInfo kernel;
};

// Everything captured for one run. `capture_note` says why device-side capture is absent or
// incomplete (e.g. "CUPTI unavailable: ..."), empty when it worked or was not attempted.
struct Trace {
  std::vector<TraceEvent> events;
  std::string capture_note;
  int64_t dropped_records = 0;
};

}  // namespace attnscope
