#pragma once
// The Timeline's per-buffer view: every allocation of one memory source as a band from its
// allocation to its free, stacked on the bytes live when it was allocated (the way PyTorch's
// memory_viz draws blocks), named by the buffer tag the backend gave it (the plan's buffer
// names: "S = scale * Q K^T", "P = softmax(S)", ...). Pure data; the view draws the bands.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_timeline.h"
#include "core/trace_event.h"

namespace attnscope::ui {

struct BufferBand {
  std::string name;
  int64_t bytes = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;   // the free, or the trace's last time when never freed
  int64_t base = 0;     // bytes live (of this source) just before the allocation
  bool freed = true;
};

// Bands of the events that `filter` selects, in allocation order; at most max_bands, keeping
// the largest (a million small blocks would only hide the few that matter). Frees of unknown
// addresses are ignored, as MemoryTimeline does.
std::vector<BufferBand> bufferBands(const std::vector<TraceEvent>& events, const MemoryFilter& filter,
                                    size_t max_bands = 300);

}  // namespace attnscope::ui
