#include "core/cupti/cupti_adapter.h"

#include <cxxabi.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace attnscope {

// Version pins. CUPTI 13.0 writes these record versions for the kinds we enable; the sizes and a
// few offsets below are what the adapter and its test rely on. Caveats:
// - CUpti_ActivityKernel10 is the CONCURRENT_KERNEL record since CUDA 12.x; CUDA 11 wrote Kernel5..9
//   with different tails (the fields read here keep their offsets, the size does not).
// - CUpti_ActivityMemcpy6 added copyCount (MemcpyBatchAsync) in CUDA 12.8/13.
// - CUpti_ActivityMemory4 (MEMORY2) added `source` in CUDA 12.x; Memory3 lacks it.
// - CUpti_ActivityMemoryPool3 added isManagedPool; its `size` on TRIMMED is read as the pool's
//   size after the trim (the documentation only says "size of the memory pool operation").
static_assert(sizeof(void*) == 8, "CUPTI record layouts below assume LP64 (CUPTILP64)");
static_assert(sizeof(CUpti_ActivityKernel10) == 216, "CONCURRENT_KERNEL record changed: recheck the adapter");
static_assert(offsetof(CUpti_ActivityKernel10, start) == 16);
static_assert(offsetof(CUpti_ActivityKernel10, name) == 104);
static_assert(offsetof(CUpti_ActivityMemory4, source) == 120);
static_assert(offsetof(CUpti_ActivityMemoryPool3, size) == 40);
static_assert(sizeof(CUpti_ActivityMemcpy6) == 96, "MEMCPY record changed: recheck the adapter");
static_assert(offsetof(CUpti_ActivityMemcpy6, bytes) == 8);
static_assert(sizeof(CUpti_ActivityMemset4) == 88, "MEMSET record changed: recheck the adapter");
static_assert(sizeof(CUpti_ActivityMemory4) == 128, "MEMORY2 record changed: recheck the adapter");
static_assert(offsetof(CUpti_ActivityMemory4, address) == 16);
static_assert(sizeof(CUpti_ActivityMemoryPool3) == 80, "MEMORY_POOL record changed: recheck the adapter");
static_assert(sizeof(CUpti_ActivityMarker2) == 56, "MARKER record changed: recheck the adapter");
static_assert(alignof(CUpti_ActivityKernel10) == 8 && alignof(CUpti_ActivityMemory4) == 8,
              "CUPTI records are 8-byte aligned (ACTIVITY_RECORD_ALIGNMENT)");

namespace {

std::string baseName(const char* path) {
  if (!path) return {};
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

uint32_t streamOf(uint32_t id) { return id == CUPTI_INVALID_STREAM_ID ? 0 : id; }

// No timing at all (0, 0: no device memory for timestamps), or only half of it: a forced flush
// (CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) hands back records still in flight with end == 0, and such a
// record is never delivered again. Either way there is no duration to show.
bool untimedRange(uint64_t start, uint64_t end) { return start == 0 || end == 0 || end < start; }

}  // namespace

const char* memcpyKindName(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "copy";
  }
}

MemoryKind memoryKindOf(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return MemoryKind::host;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return MemoryKind::pinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return MemoryKind::managed;
    default: return MemoryKind::device;  // device, array, device static, unknown
  }
}

const std::string& CuptiActivityAdapter::kernelName(const char* mangled) {
  auto [it, fresh] = names_.try_emplace(mangled ? std::string(mangled) : std::string());
  if (fresh) {
    if (!mangled || !*mangled) {
      it->second = "kernel";
    } else {
      int status = 0;
      char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
      it->second = status == 0 && demangled ? demangled : mangled;
      std::free(demangled);
    }
  }
  return it->second;
}

void CuptiActivityAdapter::observePoolSize(uint64_t pool, int64_t size, int64_t t_ns, uint32_t device,
                                           MemoryKind kind, const char* why, std::vector<TraceEvent>& out) {
  int64_t& known = pool_sizes_[pool];
  const int64_t delta = size - known;
  known = size;
  if (delta == 0) return;
  TraceEvent e;
  e.kind = delta > 0 ? EventKind::pool_reserve : EventKind::pool_release;
  e.source = EventSource::cupti;
  e.memory = kind;
  e.start_ns = e.end_ns = t_ns;
  e.name = why;
  e.device = device;
  e.bytes = delta > 0 ? delta : -delta;
  e.address = pool;
  out.push_back(std::move(e));
}

bool CuptiActivityAdapter::append(const CUpti_Activity& record, std::vector<TraceEvent>& out) {
  TraceEvent e;
  e.source = EventSource::cupti;
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
      const auto& k = reinterpret_cast<const CUpti_ActivityKernel10&>(record);
      if (untimedRange(k.start, k.end)) return ++untimed_, true;
      e.kind = EventKind::kernel;
      e.memory = MemoryKind::device;
      e.start_ns = hostNs(k.start);
      e.end_ns = hostNs(k.end);
      e.name = kernelName(k.name);
      e.stream = streamOf(k.streamId);
      e.device = k.deviceId;
      e.correlation = k.correlationId;
      e.kernel.grid[0] = k.gridX;
      e.kernel.grid[1] = k.gridY;
      e.kernel.grid[2] = k.gridZ;
      e.kernel.block[0] = k.blockX;
      e.kernel.block[1] = k.blockY;
      e.kernel.block[2] = k.blockZ;
      e.kernel.registers = k.registersPerThread;
      e.kernel.static_smem = k.staticSharedMemory;
      e.kernel.dynamic_smem = k.dynamicSharedMemory;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemcpy6&>(record);
      if (untimedRange(m.start, m.end)) return ++untimed_, true;
      e.kind = EventKind::memcpy;
      e.memory = memoryKindOf(m.dstKind);
      e.start_ns = hostNs(m.start);
      e.end_ns = hostNs(m.end);
      e.name = memcpyKindName(m.copyKind);
      e.stream = streamOf(m.streamId);
      e.device = m.deviceId;
      e.bytes = static_cast<int64_t>(m.bytes);
      e.correlation = m.correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemset4&>(record);
      if (untimedRange(m.start, m.end)) return ++untimed_, true;
      e.kind = EventKind::memset;
      e.memory = memoryKindOf(m.memoryKind);
      e.start_ns = hostNs(m.start);
      e.end_ns = hostNs(m.end);
      e.name = "memset";
      e.stream = streamOf(m.streamId);
      e.device = m.deviceId;
      e.bytes = static_cast<int64_t>(m.bytes);
      e.correlation = m.correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMemory4&>(record);
      if (m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
          m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
        return true;
      const int64_t t = hostNs(m.timestamp);
      // An allocation from a stream-ordered pool reports the pool's current size: the pool grew
      // (or shrank) to serve it, which is reservation, not live bytes.
      if (m.memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL)
        observePoolSize(m.memoryPoolConfig.address, static_cast<int64_t>(m.memoryPoolConfig.pool.size), t,
                        m.deviceId, memoryKindOf(m.memoryKind), "pool resized", out);
      e.kind = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? EventKind::alloc
                                                                                        : EventKind::free;
      e.memory = memoryKindOf(m.memoryKind);
      e.start_ns = e.end_ns = t;
      // The variable name for static memory; otherwise the library that asked (libcublas.so...),
      // which tells our buffers from cuBLAS or cuDNN internals.
      e.name = m.name ? std::string(m.name) : baseName(m.source);
      e.stream = streamOf(m.streamId);
      e.device = m.deviceId;
      e.bytes = static_cast<int64_t>(m.bytes);
      e.address = m.address;
      e.correlation = m.correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: {
      const auto& p = reinterpret_cast<const CUpti_ActivityMemoryPool3&>(record);
      if (p.memoryPoolType != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) return true;  // imported: not ours
      const MemoryKind kind = p.isManagedPool ? MemoryKind::managed : MemoryKind::device;
      const int64_t t = hostNs(p.timestamp);
      switch (p.memoryPoolOperationType) {
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
          observePoolSize(p.address, static_cast<int64_t>(p.size), t, p.deviceId, kind, "pool created", out);
          break;
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
          observePoolSize(p.address, static_cast<int64_t>(p.size), t, p.deviceId, kind, "pool trimmed", out);
          break;
        case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
          observePoolSize(p.address, 0, t, p.deviceId, kind, "pool destroyed", out);
          pool_sizes_.erase(p.address);
          break;
        default: break;
      }
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto& m = reinterpret_cast<const CUpti_ActivityMarker2&>(record);
      // 0: CUPTI could not time the marker (cupti_activity.h); hostNs(0) would be a bogus time.
      if (m.timestamp == 0) return ++untimed_, true;
      const int64_t t = hostNs(m.timestamp);
      if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
        markers_[m.id] = OpenMarker{m.name ? m.name : "", t};
        return true;
      }
      e.kind = EventKind::phase;
      e.memory = MemoryKind::device;
      if (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
        auto it = markers_.find(m.id);
        if (it == markers_.end()) return true;  // its start came before capture began
        e.name = std::move(it->second.name);
        e.start_ns = it->second.start_ns;
        markers_.erase(it);
      } else {
        e.name = m.name ? m.name : "";
        e.start_ns = t;
      }
      e.end_ns = t;
      e.correlation = m.id;
      break;
    }
    default:
      return false;
  }
  out.push_back(std::move(e));
  return true;
}

CuptiActivityAdapter::WalkResult CuptiActivityAdapter::appendBuffer(uint8_t* buffer, size_t valid_bytes,
                                                                    std::vector<TraceEvent>& out) {
  WalkResult w;
  if (!buffer || valid_bytes == 0) return w;
  CUpti_Activity* record = nullptr;
  for (;;) {
    CUptiResult r = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (r != CUPTI_SUCCESS) {
      w.status = r;
      break;
    }
    ++w.records;
    if (!append(*record, out)) ++w.unmapped;
  }
  return w;
}

}  // namespace attnscope
