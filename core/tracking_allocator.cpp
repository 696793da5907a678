#include "core/tracking_allocator.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "core/format.h"

namespace attnscope {

OutOfMemory::OutOfMemory(std::string where, int64_t requested, int64_t free_bytes, std::string detail)
    : std::runtime_error("out of " + where + " memory: requested " + formatBytes(requested) +
                         (free_bytes >= 0 ? ", " + formatBytes(free_bytes) + " free" : std::string()) +
                         (detail.empty() ? std::string() : " (" + detail + ")")),
      requested_(requested),
      free_(free_bytes) {}

TrackingAllocator::TrackingAllocator(MemoryKind kind, uint32_t device, int64_t limit_bytes)
    : kind_(kind), device_(device), limit_(limit_bytes) {}

TrackingAllocator::~TrackingAllocator() = default;

void* TrackingAllocator::allocate(int64_t bytes, std::string_view tag) {
  if (bytes < 0) throw std::invalid_argument("negative allocation size for " + std::string(tag));
  {
    std::lock_guard lock(mu_);
    if (limit_ >= 0 && live_ + bytes > limit_)
      throw OutOfMemory(where(), bytes, limit_ - live_, "limit " + formatBytes(limit_) + ", buffer " + std::string(tag));
  }
  // Zero-byte buffers still get a distinct address; they count as 0 bytes.
  void* p = rawAllocate(bytes > 0 ? bytes : 1);
  if (!p) throw OutOfMemory(where(), bytes, freeBytesHint(), "buffer " + std::string(tag));
  std::lock_guard lock(mu_);
  live_ += bytes;
  if (live_ > peak_) peak_ = live_;
  ++count_;
  blocks_.emplace(p, Live{bytes, std::string(tag)});
  TraceEvent e;
  e.kind = EventKind::alloc;
  e.source = EventSource::allocator;
  e.memory = kind_;
  e.device = device_;
  e.start_ns = e.end_ns = nowNs();
  e.name = std::string(tag);
  e.bytes = bytes;
  e.address = reinterpret_cast<uint64_t>(p);
  events_.push_back(std::move(e));
  return p;
}

void TrackingAllocator::release(void* p) {
  if (!p) return;
  TraceEvent e;
  {
    std::lock_guard lock(mu_);
    auto it = blocks_.find(p);
    if (it == blocks_.end()) throw std::logic_error("release of an address this allocator did not give out");
    live_ -= it->second.bytes;
    e.kind = EventKind::free;
    e.source = EventSource::allocator;
    e.memory = kind_;
    e.device = device_;
    e.start_ns = e.end_ns = nowNs();
    e.name = std::move(it->second.tag);
    e.bytes = it->second.bytes;
    e.address = reinterpret_cast<uint64_t>(p);
    blocks_.erase(it);
    events_.push_back(std::move(e));
  }
  rawFree(p);
}

int64_t TrackingAllocator::liveBytes() const {
  std::lock_guard lock(mu_);
  return live_;
}

int64_t TrackingAllocator::peakBytes() const {
  std::lock_guard lock(mu_);
  return peak_;
}

int64_t TrackingAllocator::allocationCount() const {
  std::lock_guard lock(mu_);
  return count_;
}

std::vector<TraceEvent> TrackingAllocator::takeEvents() {
  std::lock_guard lock(mu_);
  return std::exchange(events_, {});
}

HostAllocator::~HostAllocator() = default;

void* HostAllocator::rawAllocate(int64_t bytes) {
  size_t rounded = (static_cast<size_t>(bytes) + 63) & ~size_t{63};
  return std::aligned_alloc(64, rounded);
}

void HostAllocator::rawFree(void* p) { std::free(p); }

int64_t HostAllocator::freeBytesHint() const { return hostMemoryAvailable(); }

namespace {
int64_t meminfoField(const char* key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) {
      std::istringstream is(line.substr(std::string(key).size()));
      int64_t kb = -1;
      is >> kb;
      return kb >= 0 ? kb * 1024 : -1;
    }
  }
  return -1;
}
}  // namespace

int64_t hostMemoryAvailable() { return meminfoField("MemAvailable:"); }
int64_t hostMemoryTotal() { return meminfoField("MemTotal:"); }

}  // namespace attnscope
