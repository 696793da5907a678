#pragma once
// The allocator every backend allocates through. It records each allocation and free with a
// timestamp and keeps live and peak bytes, so the measured peak can be held against the plan.

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/trace/trace_event.h"

namespace attnscope {

// An allocation that could not be satisfied. free_bytes is -1 when unknown.
class OutOfMemory : public std::runtime_error {
 public:
  OutOfMemory(std::string where, int64_t requested, int64_t free_bytes, std::string detail = {});
  int64_t requested() const { return requested_; }
  int64_t freeBytes() const { return free_; }

 private:
  int64_t requested_;
  int64_t free_;
};

class TrackingAllocator {
 public:
  // limit_bytes < 0: no limit beyond what the underlying allocator gives.
  TrackingAllocator(MemoryKind kind, uint32_t device, int64_t limit_bytes = -1);
  virtual ~TrackingAllocator();
  TrackingAllocator(const TrackingAllocator&) = delete;
  TrackingAllocator& operator=(const TrackingAllocator&) = delete;

  // Throws OutOfMemory when the limit or the underlying allocator refuses. bytes may be 0.
  void* allocate(int64_t bytes, std::string_view tag);
  void release(void* p);

  // A limit set after construction (frontier --verify: the budget itself); < 0 removes it.
  void setLimit(int64_t limit_bytes);
  int64_t limit() const;

  int64_t liveBytes() const;
  int64_t peakBytes() const;
  int64_t allocationCount() const;
  MemoryKind kind() const { return kind_; }
  // Events recorded so far (alloc and free, EventSource::allocator); leaves the list empty.
  std::vector<TraceEvent> takeEvents();
  // While off, allocations and frees are counted instead of recorded; live and peak bytes are
  // kept either way. The engine uses it to keep a long run's trace bounded.
  void setRecording(bool on);
  int64_t droppedEvents() const;
  // Put before every tag from now on ("L3." while layer 3 of a stack allocates, so its buffers are
  // "L3.q", "L3.P = softmax(S)"); empty: none. TagPrefixScope sets it for a scope.
  void setTagPrefix(std::string prefix);

 protected:
  virtual void* rawAllocate(int64_t bytes) = 0;  // nullptr on failure
  virtual void rawFree(void* p) = 0;
  // Bytes the underlying allocator could still give, for the OOM message; -1 if unknown.
  virtual int64_t freeBytesHint() const { return -1; }
  virtual std::string where() const = 0;

 private:
  struct Live {
    int64_t bytes;
    std::string tag;
  };
  mutable std::mutex mu_;
  MemoryKind kind_;
  uint32_t device_;
  int64_t limit_;
  int64_t live_ = 0;
  int64_t peak_ = 0;
  int64_t count_ = 0;
  std::unordered_map<void*, Live> blocks_;
  std::vector<TraceEvent> events_;
  bool recording_ = true;
  int64_t dropped_ = 0;
  std::string prefix_;
};

class TagPrefixScope {
 public:
  TagPrefixScope(TrackingAllocator& a, std::string prefix) : a_(a) { a_.setTagPrefix(std::move(prefix)); }
  ~TagPrefixScope() { a_.setTagPrefix({}); }
  TagPrefixScope(const TagPrefixScope&) = delete;
  TagPrefixScope& operator=(const TagPrefixScope&) = delete;

 private:
  TrackingAllocator& a_;
};

// Host memory, 64-byte aligned. Used by the CPU backends.
//
// Blocks of kCachedBytes or more are kept when freed and handed out again to a request of the
// same rounded size (a run's repetitions allocate the same buffers in the same order), so a rep
// does not fault in and zero fresh pages for every large buffer: on Zen 4 the layer's fp32 train
// pass faulted 30 MiB per rep (7,800 faults) without it. The bytes tracked (live, peak, events)
// are the requests, unchanged. What this allocator holds, live + cached, stays within held(peak):
// the peak so far plus half of the memory that peak leaves free (MemAvailable and the cgroup's
// headroom when the first large block was asked for), at most the peak again, so a run sized to
// the machine's memory gets no cache at all. A free is kept only within that bound; a request
// that misses releases cached blocks, largest first, until live + cached + request is within
// it; a failed allocation releases them all and tries again. A reused block holds its previous
// contents, as memory from malloc may.
class HostAllocator final : public TrackingAllocator {
 public:
  static constexpr int64_t kCachedBytes = 256 * 1024;

  explicit HostAllocator(int64_t limit_bytes = -1) : TrackingAllocator(MemoryKind::host, 0, limit_bytes) {}
  ~HostAllocator() override;

  // Bytes in freed blocks kept for reuse, and how many requests they served.
  int64_t cachedBytes() const;
  int64_t cacheHits() const;

 protected:
  void* rawAllocate(int64_t bytes) override;
  void rawFree(void* p) override;
  int64_t freeBytesHint() const override;
  std::string where() const override { return "host"; }

 private:
  // Frees cached blocks, largest first, until at most `keep` bytes remain. Holds cache_mu_.
  void shrinkCache(int64_t keep);
  // The most live + cached may be when the tracked peak is `peak`.
  int64_t held(int64_t peak) const;

  static constexpr int64_t kUnread = -2;
  int64_t available_at_start_ = kUnread;  // hostMemoryAvailable(), read once; -1 unknown

  mutable std::mutex cache_mu_;
  std::unordered_map<void*, size_t> sizes_;       // every block of kCachedBytes or more given out
  std::multimap<size_t, void*> cached_;           // freed blocks by rounded size
  int64_t cached_bytes_ = 0;
  int64_t hits_ = 0;
};

// Bytes this process can still allocate: the least of MemAvailable, the cgroup's limit (v2
// memory.max, v1 memory.limit_in_bytes, each level up to the root) minus its usage, and
// RLIMIT_AS / RLIMIT_DATA minus the process's current address space / data size. -1 if unknown.
int64_t hostMemoryAvailable();
int64_t hostMemoryTotal();

// Owns one allocation; frees it on destruction, so an exception mid-run releases everything.
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(TrackingAllocator& a, int64_t count, std::string_view tag)
      : alloc_(&a), count_(count), p_(static_cast<T*>(a.allocate(count * static_cast<int64_t>(sizeof(T)), tag))) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : alloc_(o.alloc_), count_(o.count_), p_(o.p_) { o.p_ = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      alloc_ = o.alloc_;
      count_ = o.count_;
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  void reset() {
    if (p_) alloc_->release(p_);
    p_ = nullptr;
  }
  T* data() const { return p_; }
  int64_t size() const { return count_; }
  int64_t bytes() const { return count_ * static_cast<int64_t>(sizeof(T)); }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  TrackingAllocator* alloc_ = nullptr;
  int64_t count_ = 0;
  T* p_ = nullptr;
};

}  // namespace attnscope
