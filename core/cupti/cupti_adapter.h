#pragma once
// Turns CUPTI activity records into plain core TraceEvents. This header and core/cupti/*.cpp are
// the only places that see CUpti_* types; everything downstream sees TraceEvent.
//
// Records and the struct versions read (CUPTI 13.0, CUPTI_API_VERSION 130001):
//   CONCURRENT_KERNEL  CUpti_ActivityKernel10      -> EventKind::kernel
//   MEMCPY             CUpti_ActivityMemcpy6       -> EventKind::memcpy (name "HtoD", "DtoH", ...)
//   MEMSET             CUpti_ActivityMemset4       -> EventKind::memset
//   MEMORY2            CUpti_ActivityMemory4       -> EventKind::alloc / free (+ pool growth, below)
//   MEMORY_POOL        CUpti_ActivityMemoryPool3   -> EventKind::pool_reserve / pool_release
//   MARKER             CUpti_ActivityMarker2       -> EventKind::phase (start/end pairs by id)
// CUPTI writes, for each kind, the newest record version of the CUPTI it ships with; a CUPTI that
// bumps a version changes the layout, so cupti_adapter.cpp pins each size with a static_assert and
// a newer toolkit must be checked field by field before the asserts are updated.
//
// Stateful on purpose: marker ranges arrive as separate start and end records, and memory pools
// report their current size rather than a change, so the adapter remembers open markers and the
// last size of each pool (by pool address) to emit reserve/release deltas. Not thread-safe; the
// capture feeds it under its lock.
//
// Time: CUPTI timestamps (ns, CUPTI's clock) become host steady-clock ns (core/base/clock.h nowNs) by
// adding hostOffsetNs(). Records with no timing (start == end == 0, e.g. kernels CUPTI could not
// time; end == 0, a record a forced flush handed back unfinished; a marker with timestamp 0) are
// skipped and counted in untimed().

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <cupti_activity.h>

#include "core/trace/trace_event.h"

namespace attnscope {

class CuptiActivityAdapter {
 public:
  explicit CuptiActivityAdapter(int64_t host_offset_ns = 0) : offset_(host_offset_ns) {}

  void setHostOffsetNs(int64_t offset) { offset_ = offset; }
  int64_t hostOffsetNs() const { return offset_; }

  // Appends the events for one record (none for a marker start or an unmapped kind). Returns
  // false when the record's kind is not one this adapter maps.
  bool append(const CUpti_Activity& record, std::vector<TraceEvent>& out);

  struct WalkResult {
    size_t records = 0;          // records walked
    size_t unmapped = 0;         // of which of a kind this adapter does not map
    CUptiResult status = CUPTI_SUCCESS;  // the walk's last error other than "no more records"
  };
  // Walks a buffer CUPTI completed (or a test packed) with cuptiActivityGetNextRecord.
  WalkResult appendBuffer(uint8_t* buffer, size_t valid_bytes, std::vector<TraceEvent>& out);

  int64_t untimed() const { return untimed_; }
  size_t openMarkers() const { return markers_.size(); }

 private:
  struct OpenMarker {
    std::string name;
    int64_t start_ns = 0;
  };
  int64_t hostNs(uint64_t cupti_ns) const { return static_cast<int64_t>(cupti_ns) + offset_; }
  const std::string& kernelName(const char* mangled);
  void observePoolSize(uint64_t pool, int64_t size, int64_t t_ns, uint32_t device, MemoryKind kind,
                       const char* why, std::vector<TraceEvent>& out);

  int64_t offset_;
  int64_t untimed_ = 0;
  // Demangled names by mangled text, not by CUPTI's pointer: the pointer is shared by a kernel's
  // records, but CUPTI frees it when the module goes (lazy loading, cuModuleUnload, context
  // teardown) and may reuse the address for another kernel's name; this cache lives all process.
  std::unordered_map<std::string, std::string> names_;
  std::unordered_map<uint32_t, OpenMarker> markers_;
  std::unordered_map<uint64_t, int64_t> pool_sizes_;
};

// "HtoD", "DtoH", "DtoD", ... for a CUpti_ActivityMemcpyKind value.
const char* memcpyKindName(uint8_t copy_kind);
// CUpti_ActivityMemoryKind -> MemoryKind (pageable: host; device, array, static: device).
MemoryKind memoryKindOf(uint32_t cupti_memory_kind);

}  // namespace attnscope
