#include "core/trace/memory_timeline.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

namespace attnscope {
namespace {

bool grows(EventKind k) { return k == EventKind::alloc || k == EventKind::pool_reserve; }
bool isMemoryEvent(EventKind k) {
  return k == EventKind::alloc || k == EventKind::free || k == EventKind::pool_reserve ||
         k == EventKind::pool_release;
}

struct BlockKey {
  uint64_t address;
  uint32_t device;
  EventSource source;
  bool operator==(const BlockKey&) const = default;
};

struct BlockKeyHash {
  size_t operator()(const BlockKey& k) const {
    uint64_t h = k.address * 0x9E3779B97F4A7C15ull;
    h ^= (static_cast<uint64_t>(k.device) << 8 | static_cast<uint64_t>(k.source)) + 0x632BE59BD9B4E019ull + (h << 6) +
         (h >> 2);
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

BlockKey keyOf(const TraceEvent& e) { return {e.address, e.device, e.source}; }

// A live block. `pending` holds a second block at the same address allocated in the same tick as
// the free that ends this one (see the tie rule); -1 when none.
struct LiveBlock {
  int64_t bytes = 0;
  int64_t pending = -1;
};

// Range maximum over the curve, first index on ties, so a phase's peak time is its first arrival.
class RangeMax {
 public:
  explicit RangeMax(const std::vector<MemoryPoint>& curve) : n_(curve.size()), tree_(2 * curve.size()) {
    for (size_t i = 0; i < n_; ++i) tree_[n_ + i] = {curve[i].bytes, i};
    for (size_t i = n_; i-- > 1;) tree_[i] = better(tree_[2 * i], tree_[2 * i + 1]);
  }
  // Max over [lo, hi), lo < hi.
  std::pair<int64_t, size_t> query(size_t lo, size_t hi) const {
    Node best{INT64_MIN, SIZE_MAX};
    for (lo += n_, hi += n_; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1) best = better(best, tree_[lo++]);
      if (hi & 1) best = better(best, tree_[--hi]);
    }
    return {best.value, best.index};
  }

 private:
  struct Node {
    int64_t value = INT64_MIN;
    size_t index = SIZE_MAX;
  };
  static Node better(const Node& a, const Node& b) {
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
  size_t n_;
  std::vector<Node> tree_;
};

}  // namespace

bool MemoryFilter::matches(const TraceEvent& e) const {
  if (source && e.source != *source) return false;
  if (device && e.device != *device) return false;
  if (memory && e.memory != *memory && !(*memory == MemoryKind::device && e.memory == MemoryKind::pool)) return false;
  return true;
}

namespace {

// The selected memory events in replay order: by time, growing events (alloc, pool_reserve)
// before shrinking ones within a timestamp, original order within each class (the tie rule).
std::vector<uint32_t> replayOrder(const std::vector<TraceEvent>& events, const MemoryFilter& filter) {
  struct Step {
    int64_t t;
    uint32_t shrink;  // 0: grows, 1: shrinks
    uint32_t index;
  };
  std::vector<Step> steps;
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (isMemoryEvent(e.kind) && filter.matches(e))
      steps.push_back({e.start_ns, grows(e.kind) ? 0u : 1u, static_cast<uint32_t>(i)});
  }
  std::sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.shrink != b.shrink) return a.shrink < b.shrink;
    return a.index < b.index;
  });
  std::vector<uint32_t> order(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) order[i] = steps[i].index;
  return order;
}

// The live blocks and levels while the events of one tick after another are applied.
class LiveState {
 public:
  LiveState(const std::vector<TraceEvent>& events, size_t expected_blocks,
            std::function<void(MemoryAnomaly::Kind, const TraceEvent&)> flag)
      : events_(events), flag_(std::move(flag)) {
    live_.reserve(expected_blocks);
  }
  int64_t level = 0;  // bytes live
  int64_t pool = 0;   // bytes reserved by pools
  bool have_alloc_events = false;
  bool have_pool_events = false;

  // The growing events of one tick; `shrinking` are the same tick's frees (a free and a
  // re-allocation of one address at one timestamp are not a double allocation).
  void grow(const uint32_t* begin, const uint32_t* end, const uint32_t* shrink_end) {
    // Keys freed in this tick; built only when an allocation meets a live address.
    std::unordered_set<BlockKey, BlockKeyHash> freed_here;
    bool freed_here_built = false;
    for (const uint32_t* s = begin; s < end; ++s) {
      const TraceEvent& e = events_[*s];
      if (e.kind == EventKind::pool_reserve) {
        have_pool_events = true;
        pool += e.bytes;
        continue;
      }
      have_alloc_events = true;
      auto [it, inserted] = live_.try_emplace(keyOf(e), LiveBlock{e.bytes, -1});
      if (!inserted) {
        if (!freed_here_built) {
          for (const uint32_t* f = end; f < shrink_end; ++f)
            if (events_[*f].kind == EventKind::free) freed_here.insert(keyOf(events_[*f]));
          freed_here_built = true;
        }
        if (it->second.pending < 0 && freed_here.count(keyOf(e))) {
          it->second.pending = e.bytes;
        } else {
          // An address cannot hold two live blocks: the older one's free was lost. It leaves the
          // curve now, the latest moment it can have ended, so the peak is not understated.
          flag_(MemoryAnomaly::Kind::double_alloc, e);
          level -= it->second.bytes;
          it->second.bytes = e.bytes;
        }
      }
      level += e.bytes;
    }
  }

  void shrink(const uint32_t* begin, const uint32_t* end) {
    for (const uint32_t* s = begin; s < end; ++s) {
      const TraceEvent& e = events_[*s];
      if (e.kind == EventKind::pool_release) {
        have_pool_events = true;
        pool = std::max<int64_t>(0, pool - e.bytes);
        continue;
      }
      have_alloc_events = true;
      auto it = live_.find(keyOf(e));
      if (it == live_.end()) {
        flag_(MemoryAnomaly::Kind::unknown_free, e);
        continue;
      }
      level -= it->second.bytes;
      if (it->second.pending >= 0) {
        it->second.bytes = it->second.pending;
        it->second.pending = -1;
      } else {
        live_.erase(it);
      }
    }
  }

 private:
  const std::vector<TraceEvent>& events_;
  std::function<void(MemoryAnomaly::Kind, const TraceEvent&)> flag_;
  std::unordered_map<BlockKey, LiveBlock, BlockKeyHash> live_;
};

// Appends a tick's points to a curve: the high level when it exceeds both neighbours (the tie
// rule's second point), then the final level; nothing when the tick changed nothing.
void appendTick(std::vector<MemoryPoint>& curve, int64_t t, int64_t before, int64_t high, int64_t after) {
  if (!curve.empty() && high == before && after == before) return;
  if (high > after && high > before) curve.push_back({t, high});
  curve.push_back({t, after});
}

}  // namespace

MemoryTimeline::MemoryTimeline(const std::vector<TraceEvent>& events, const MemoryFilter& filter) {
  const std::vector<uint32_t> order = replayOrder(events, filter);
  event_count_ = static_cast<int64_t>(order.size());
  const bool have_alloc_events = replay(events, order);
  std::vector<const TraceEvent*> phases;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) phases.push_back(&e);
  findPhasePeaks(std::move(phases), have_alloc_events);
}

bool MemoryTimeline::replay(const std::vector<TraceEvent>& events, const std::vector<uint32_t>& order) {
  LiveState state(events, order.size() / 2 + 1, [this](MemoryAnomaly::Kind kind, const TraceEvent& e) {
    anomalies_.push_back({kind, e.start_ns, e.address, e.bytes, e.name});
    ++(kind == MemoryAnomaly::Kind::unknown_free ? unknown_frees_ : double_allocs_);
  });
  peak_ns_ = order.empty() ? 0 : events[order.front()].start_ns;
  const uint32_t* const all = order.data();
  for (size_t g = 0; g < order.size();) {
    const int64_t t = events[order[g]].start_ns;
    size_t end = g;
    while (end < order.size() && events[order[end]].start_ns == t) ++end;
    size_t first_shrink = g;
    while (first_shrink < end && grows(events[order[first_shrink]].kind)) ++first_shrink;
    const int64_t level_before = state.level, pool_before = state.pool;

    state.grow(all + g, all + first_shrink, all + end);
    const int64_t high = state.level, pool_high = state.pool;
    if (high > peak_bytes_) {
      peak_bytes_ = high;
      peak_ns_ = t;
    }
    if (pool_high > pool_peak_bytes_) {
      pool_peak_bytes_ = pool_high;
      pool_peak_ns_ = t;
    }
    state.shrink(all + first_shrink, all + end);

    if (state.have_alloc_events) appendTick(curve_, t, level_before, high, state.level);
    if (state.have_pool_events) appendTick(pool_curve_, t, pool_before, pool_high, state.pool);
    g = end;
  }
  if (!state.have_alloc_events) peak_ns_ = 0;
  return state.have_alloc_events;
}

void MemoryTimeline::findPhasePeaks(std::vector<const TraceEvent*> phases, bool have_alloc_events) {
  // Phase peaks: the level carried in at the phase start, then the range maximum inside it.
  std::stable_sort(phases.begin(), phases.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->start_ns < b->start_ns; });
  RangeMax range(curve_);
  phase_peaks_.reserve(phases.size());
  for (const TraceEvent* p : phases) {
    PhasePeak pp{p->name, p->start_ns, std::max(p->start_ns, p->end_ns), 0, p->start_ns};
    auto lo = std::lower_bound(curve_.begin(), curve_.end(), pp.start_ns,
                               [](const MemoryPoint& m, int64_t t) { return m.t_ns < t; });
    auto hi = std::upper_bound(curve_.begin(), curve_.end(), pp.end_ns,
                               [](int64_t t, const MemoryPoint& m) { return t < m.t_ns; });
    if (lo != curve_.begin()) pp.peak_bytes = std::prev(lo)->bytes;
    if (lo < hi) {
      auto [value, index] = range.query(static_cast<size_t>(lo - curve_.begin()), static_cast<size_t>(hi - curve_.begin()));
      if (value > pp.peak_bytes) {
        pp.peak_bytes = value;
        pp.peak_ns = curve_[index].t_ns;
      }
    }
    phase_peaks_.push_back(std::move(pp));
  }

  // The innermost phase holding the peak: the latest start, then the shortest.
  if (!have_alloc_events) return;
  const PhasePeak* holder = nullptr;
  for (const PhasePeak& pp : phase_peaks_) {
    if (pp.start_ns > peak_ns_ || pp.end_ns < peak_ns_) continue;
    if (!holder || pp.start_ns > holder->start_ns || (pp.start_ns == holder->start_ns && pp.end_ns < holder->end_ns))
      holder = &pp;
  }
  if (holder) peak_phase_ = holder->name;
}

std::vector<MemoryPoint> downsampleCurve(const std::vector<MemoryPoint>& curve, size_t buckets) {
  if (buckets == 0 || curve.size() <= 2 * buckets) return curve;
  const int64_t t0 = curve.front().t_ns;
  const int64_t t1 = curve.back().t_ns;
  const __int128 span = static_cast<__int128>(t1) - t0 + 1;
  std::vector<size_t> keep;
  keep.reserve(2 * buckets + 2);
  keep.push_back(0);
  size_t bucket = SIZE_MAX, lo = 0, hi = 0;
  auto close = [&] {
    if (bucket == SIZE_MAX) return;
    keep.push_back(std::min(lo, hi));
    keep.push_back(std::max(lo, hi));
  };
  for (size_t i = 0; i < curve.size(); ++i) {
    const size_t b = static_cast<size_t>((static_cast<__int128>(curve[i].t_ns) - t0) * buckets / span);
    if (b != bucket) {
      close();
      bucket = b;
      lo = hi = i;
    } else {
      if (curve[i].bytes < curve[lo].bytes) lo = i;
      if (curve[i].bytes > curve[hi].bytes) hi = i;
    }
  }
  close();
  keep.push_back(curve.size() - 1);
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
  std::vector<MemoryPoint> out;
  out.reserve(keep.size());
  for (size_t i : keep) out.push_back(curve[i]);
  return out;
}

}  // namespace attnscope
