#pragma once
// The memory timeline of one run, computed from its trace events: the live-bytes curve, its peak
// (value, time, phase), the peak within each phase, the pool-reserved curve, and anomalies (frees
// of unknown addresses, a second allocation at a live address).
//
// Sources are never mixed by accident: the allocator and CUPTI both see the same cudaMalloc, so a
// run may hold two records of one buffer. A MemoryFilter picks one source (and a memory kind); the
// live-block map is keyed by (source, device, address) so an unfiltered timeline does not flag
// them as double allocations, but it does sum both, which is rarely what you want.
//
// Tie rule (equal timestamps): all growing events at a timestamp (alloc, pool_reserve) are applied
// before the shrinking ones (free, pool_release), in their original order within each class. So
// the peak is never understated: when a buffer is freed and another allocated within one clock
// tick, both count at that tick. The curve then holds up to two points at that timestamp: the
// level after the growing events (when it exceeds the final level), then the final level. A free and a
// re-allocation of the same address at one timestamp are not a double allocation: the free ends
// the older block.
//
// Cost: one sort of the selected events, O(n log n); phase peaks by a range-maximum tree over the
// curve, O(p log n) for p phases. A million events take well under a second.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/trace/trace_event.h"

namespace attnscope {

struct MemoryFilter {
  std::optional<EventSource> source;  // nullopt: every source (see the note above)
  std::optional<MemoryKind> memory;   // nullopt: every kind. MemoryKind::device also takes pool
  std::optional<uint32_t> device;     // nullopt: every device
  bool matches(const TraceEvent& e) const;
};

struct MemoryPoint {
  int64_t t_ns = 0;
  int64_t bytes = 0;
  bool operator==(const MemoryPoint&) const = default;
};

struct PhasePeak {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t peak_bytes = 0;  // most bytes live at any time in [start_ns, end_ns], carried-in level included
  int64_t peak_ns = 0;     // first time the phase reaches peak_bytes
};

struct MemoryAnomaly {
  enum class Kind { unknown_free, double_alloc };
  Kind kind = Kind::unknown_free;
  int64_t t_ns = 0;
  uint64_t address = 0;
  int64_t bytes = 0;  // bytes of the event flagged
  std::string name;
};

class MemoryTimeline {
 public:
  MemoryTimeline() = default;
  // Phases are taken from every phase event in `events` (whatever the filter says).
  MemoryTimeline(const std::vector<TraceEvent>& events, const MemoryFilter& filter);

  // Points in time order (see the tie rule for two points at one timestamp); empty when no
  // alloc/free event matched.
  const std::vector<MemoryPoint>& curve() const { return curve_; }
  int64_t peakBytes() const { return peak_bytes_; }
  int64_t peakNs() const { return peak_ns_; }  // first time the peak is reached; 0 when no events
  // The innermost (latest-starting) phase holding peakNs(); empty when none does.
  const std::string& peakPhase() const { return peak_phase_; }
  // One entry per phase event, in start order.
  const std::vector<PhasePeak>& phasePeaks() const { return phase_peaks_; }

  // Bytes reserved by memory pools (pool_reserve/pool_release); empty when no pool events.
  const std::vector<MemoryPoint>& poolCurve() const { return pool_curve_; }
  int64_t poolPeakBytes() const { return pool_peak_bytes_; }
  int64_t poolPeakNs() const { return pool_peak_ns_; }

  const std::vector<MemoryAnomaly>& anomalies() const { return anomalies_; }
  int64_t unknownFrees() const { return unknown_frees_; }
  int64_t doubleAllocs() const { return double_allocs_; }
  int64_t finalBytes() const { return curve_.empty() ? 0 : curve_.back().bytes; }  // leaked at the end
  int64_t eventCount() const { return event_count_; }  // alloc/free/pool events that matched

 private:
  // Applies the selected events in replay order (the tie rule), building both curves, the
  // peaks and the anomalies. Returns whether any alloc/free event was seen.
  bool replay(const std::vector<TraceEvent>& events, const std::vector<uint32_t>& order);
  // Each phase's peak from the curve, and the innermost phase holding the overall peak.
  void findPhasePeaks(std::vector<const TraceEvent*> phases, bool have_alloc_events);

  std::vector<MemoryPoint> curve_;
  std::vector<MemoryPoint> pool_curve_;
  std::vector<PhasePeak> phase_peaks_;
  std::vector<MemoryAnomaly> anomalies_;
  std::string peak_phase_;
  int64_t peak_bytes_ = 0;
  int64_t peak_ns_ = 0;
  int64_t pool_peak_bytes_ = 0;
  int64_t pool_peak_ns_ = 0;
  int64_t unknown_frees_ = 0;
  int64_t double_allocs_ = 0;
  int64_t event_count_ = 0;
};

// Downsampling for charts (heaptrack style): the time range is cut into `buckets` equal slices and
// each non-empty slice yields the points holding its minimum and its maximum, in time order (one
// point when they coincide). The true peak and the deepest trough survive, so does the first and
// the last point; a curve with at most 2 * buckets points is returned unchanged.
std::vector<MemoryPoint> downsampleCurve(const std::vector<MemoryPoint>& curve, size_t buckets);

}  // namespace attnscope
