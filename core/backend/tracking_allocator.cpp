#include "core/backend/tracking_allocator.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/clock.h"
#include "core/base/format.h"

namespace attnscope {

OutOfMemory::OutOfMemory(std::string where, int64_t requested, int64_t free_bytes, std::string detail)
    : std::runtime_error("out of " + where + " memory: requested " + formatBytes(requested) +
                         (free_bytes >= 0 ? ", " + formatBytes(free_bytes) + " free" : std::string()) +
                         (detail.empty() ? std::string() : " (" + detail + ")")),
      requested_(requested),
      free_(free_bytes) {}

TrackingAllocator::TrackingAllocator(MemoryKind kind, uint32_t device, int64_t limit_bytes)
    : kind_(kind), device_(device), limit_(limit_bytes) {}

void TrackingAllocator::setLimit(int64_t limit_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  limit_ = limit_bytes;
}

int64_t TrackingAllocator::limit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return limit_;
}

TrackingAllocator::~TrackingAllocator() = default;

void TrackingAllocator::setTagPrefix(std::string prefix) {
  std::lock_guard lock(mu_);
  prefix_ = std::move(prefix);
}

void* TrackingAllocator::allocate(int64_t bytes, std::string_view bare_tag) {
  std::string tag;
  {
    std::lock_guard lock(mu_);
    tag = prefix_ + std::string(bare_tag);
  }
  if (bytes < 0) throw std::invalid_argument("negative allocation size for " + tag);
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
  blocks_.emplace(p, Live{bytes, tag});
  if (!recording_) {
    ++dropped_;
    return p;
  }
  TraceEvent e;
  e.kind = EventKind::alloc;
  e.source = EventSource::allocator;
  e.memory = kind_;
  e.device = device_;
  e.start_ns = e.end_ns = nowNs();
  e.name = std::move(tag);
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
    if (recording_) events_.push_back(std::move(e));
    else ++dropped_;
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

void TrackingAllocator::setRecording(bool on) {
  std::lock_guard lock(mu_);
  recording_ = on;
}

int64_t TrackingAllocator::droppedEvents() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

HostAllocator::~HostAllocator() {
  std::lock_guard lock(cache_mu_);
  shrinkCache(0);
}

int64_t HostAllocator::cachedBytes() const {
  std::lock_guard lock(cache_mu_);
  return cached_bytes_;
}

int64_t HostAllocator::cacheHits() const {
  std::lock_guard lock(cache_mu_);
  return hits_;
}

int64_t HostAllocator::held(int64_t peak) const {
  if (available_at_start_ < 0) return peak;
  return peak + std::clamp<int64_t>((available_at_start_ - peak) / 2, 0, peak);
}

void HostAllocator::shrinkCache(int64_t keep) {
  while (cached_bytes_ > keep && !cached_.empty()) {
    auto largest = std::prev(cached_.end());
    sizes_.erase(largest->second);
    std::free(largest->second);
    cached_bytes_ -= static_cast<int64_t>(largest->first);
    cached_.erase(largest);
  }
}

void* HostAllocator::rawAllocate(int64_t bytes) {
  const size_t rounded = (static_cast<size_t>(bytes) + 63) & ~size_t{63};
  if (static_cast<int64_t>(rounded) < kCachedBytes) return std::aligned_alloc(64, rounded);
  // The base's counters, read before this request is added to them.
  const int64_t live = liveBytes(), peak = peakBytes();
  std::lock_guard lock(cache_mu_);
  if (auto it = cached_.find(rounded); it != cached_.end()) {
    void* p = it->second;
    cached_bytes_ -= static_cast<int64_t>(rounded);
    cached_.erase(it);
    ++hits_;
    return p;
  }
  if (available_at_start_ == kUnread) available_at_start_ = hostMemoryAvailable();
  const int64_t request = static_cast<int64_t>(rounded);
  shrinkCache(std::max<int64_t>(0, held(std::max(peak, live + request)) - live - request));
  void* p = std::aligned_alloc(64, rounded);
  if (!p) {
    shrinkCache(0);
    p = std::aligned_alloc(64, rounded);
  }
  if (p) sizes_.emplace(p, rounded);
  return p;
}

void HostAllocator::rawFree(void* p) {
  {
    std::lock_guard lock(cache_mu_);
    auto it = sizes_.find(p);
    if (it != sizes_.end()) {
      // The base has already taken this block out of live bytes.
      const int64_t size = static_cast<int64_t>(it->second);
      if (liveBytes() + cached_bytes_ + size <= held(peakBytes())) {
        cached_.emplace(it->second, p);
        cached_bytes_ += size;
        return;
      }
      sizes_.erase(it);
    }
  }
  std::free(p);
}

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

// A number from a one-line file; -1 when absent or not a number ("max": no limit).
int64_t fileNumber(const std::filesystem::path& p) {
  std::ifstream in(p);
  int64_t v = -1;
  if (!(in >> v)) return -1;
  return v;
}

// The least (limit - usage) over the cgroup and its ancestors, -1 when no level has a limit.
int64_t cgroupHeadroom(const std::filesystem::path& mount, const std::string& path, const char* limitFile,
                       const char* usageFile) {
  namespace fs = std::filesystem;
  int64_t best = -1;
  fs::path dir = (mount / fs::path(path).relative_path()).lexically_normal();
  for (;;) {
    const int64_t limit = fileNumber(dir / limitFile), usage = fileNumber(dir / usageFile);
    // cgroup v1 writes "no limit" as a huge page-rounded number; anything over 2^60 is none.
    if (limit >= 0 && limit < (int64_t{1} << 60)) {
      const int64_t room = std::max<int64_t>(0, limit - std::max<int64_t>(0, usage));
      best = best < 0 ? room : std::min(best, room);
    }
    if (dir.string().size() <= mount.string().size() || dir.parent_path() == dir) break;
    dir = dir.parent_path();
  }
  return best;
}

int64_t cgroupAvailable() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  int64_t best = -1;
  auto take = [&](int64_t v) {
    if (v >= 0) best = best < 0 ? v : std::min(best, v);
  };
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty())
      take(cgroupHeadroom("/sys/fs/cgroup", path, "memory.max", "memory.current"));
    else if (("," + controllers + ",").find(",memory,") != std::string::npos)
      take(cgroupHeadroom("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", "memory.usage_in_bytes"));
  }
  return best;
}

// rlimit minus what the process already uses of it (VmSize for RLIMIT_AS, VmData for RLIMIT_DATA).
int64_t rlimitHeadroom(int resource, const char* statusKey) {
  rlimit rl{};
  if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return -1;
  std::ifstream in("/proc/self/status");
  std::string line;
  int64_t usedKb = 0;
  while (std::getline(in, line))
    if (line.rfind(statusKey, 0) == 0) {
      std::istringstream is(line.substr(std::string(statusKey).size()));
      is >> usedKb;
    }
  const int64_t limit = rl.rlim_cur > static_cast<rlim_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(rl.rlim_cur);
  return std::max<int64_t>(0, limit - usedKb * 1024);
}

}  // namespace

int64_t hostMemoryAvailable() {
  int64_t best = meminfoField("MemAvailable:");
  for (int64_t v : {cgroupAvailable(), rlimitHeadroom(RLIMIT_AS, "VmSize:"), rlimitHeadroom(RLIMIT_DATA, "VmData:")})
    if (v >= 0) best = best < 0 ? v : std::min(best, v);
  return best;
}

int64_t hostMemoryTotal() { return meminfoField("MemTotal:"); }

}  // namespace attnscope
