#pragma once
// The Timeline's per-buffer view: every allocation of one memory source as a band from its
// allocation to its free, stacked in allocation order on the blocks still live below it (the
// way PyTorch's memory_viz draws blocks): when a block below is freed, every band above it
// moves down by that block's bytes, so the bands' top always follows the live-bytes curve.
// Bands are named by the buffer tag the backend gave them (the plan's buffer names:
// "S = scale * Q K^T", "P = softmax(S)", ...). Pure data; the view draws the bands.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/trace/memory_timeline.h"
#include "core/trace/trace_event.h"

namespace attnscope::ui {

struct BufferBand {
  std::string name;
  int64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;   // the free, or the trace's last time when never freed
  int64_t base = 0;     // bytes live (of this source) just before the allocation
  bool freed = true;
  // Where the band moves down: from t_ns on it sits on `bytes` (a new base), in time order.
  // Several moves at one timestamp are one entry (the last base).
  std::vector<MemoryPoint> moves;
};

// The band's base at time t (its allocation base before the first move).
int64_t baseAt(const BufferBand& band, int64_t t_ns);

// The band cut where it moves: one (start, end, base) piece per stretch at one height; pieces
// of zero length are left out.
struct BandPiece {
  int64_t start_ns = 0, end_ns = 0, base = 0;
};
std::vector<BandPiece> piecesOf(const BufferBand& band);

// The bands live at t_ns (allocated at or before it and freed at or after it, or never freed),
// largest first: a memory snapshot at t, and at the peak its top contributors. A block freed at
// t_ns counts, as the tie rule applies allocations before frees at one time: the peak at t_ns is
// what was live between the two. Indexes into `bands`.
std::vector<size_t> liveAt(const std::vector<BufferBand>& bands, int64_t t_ns);

// Bands of the events that `filter` selects, in allocation order; at most max_bands, keeping
// the largest (a million small blocks would only hide the few that matter). Frees of unknown
// addresses are ignored, as MemoryTimeline does.
std::vector<BufferBand> bufferBands(const std::vector<TraceEvent>& events, const MemoryFilter& filter,
                                    size_t max_bands = 300);

}  // namespace attnscope::ui
