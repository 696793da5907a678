#include "ui/buffer_bands.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <tuple>

namespace attnscope::ui {

std::vector<BufferBand> bufferBands(const std::vector<TraceEvent>& events, const MemoryFilter& filter,
                                    size_t max_bands) {
  // Time order, allocations before frees at one timestamp (MemoryTimeline's tie rule).
  std::vector<const TraceEvent*> order;
  int64_t last = 0;
  for (const TraceEvent& e : events) {
    last = std::max({last, e.start_ns, e.end_ns});
    if ((e.kind == EventKind::alloc || e.kind == EventKind::free) && filter.matches(e)) order.push_back(&e);
  }
  std::stable_sort(order.begin(), order.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->kind == EventKind::alloc && b->kind != EventKind::alloc;
  });
  std::vector<BufferBand> bands;
  std::map<std::tuple<int, uint32_t, uint64_t>, size_t> live;  // (source, device, address) -> band
  // The live bands in allocation order (a band's index is its order): the stack, bottom first.
  std::map<size_t, int64_t> stack;  // band -> its current base
  int64_t live_bytes = 0;
  for (const TraceEvent* e : order) {
    const auto key = std::make_tuple(static_cast<int>(e->source), e->device, e->address);
    if (e->kind == EventKind::alloc) {
      bands.push_back({e->name.empty() ? std::string("(unnamed)") : e->name, e->bytes, e->start_ns, last, live_bytes, false, {}});
      live[key] = bands.size() - 1;
      stack[bands.size() - 1] = live_bytes;
      live_bytes += e->bytes;
    } else if (auto it = live.find(key); it != live.end()) {
      const size_t freed = it->second;
      BufferBand& b = bands[freed];
      b.end_ns = e->start_ns;
      b.freed = true;
      live_bytes -= b.bytes;
      live.erase(it);
      // Everything stacked above the freed block moves down by its bytes.
      for (auto above = stack.erase(stack.find(freed)); above != stack.end(); ++above) {
        above->second -= b.bytes;
        auto& moves = bands[above->first].moves;
        if (!moves.empty() && moves.back().t_ns == e->start_ns) moves.back().bytes = above->second;
        else moves.push_back({e->start_ns, above->second});
      }
    }
  }
  if (bands.size() > max_bands) {
    std::vector<size_t> idx(bands.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(max_bands), idx.end(),
                     [&](size_t a, size_t b) { return bands[a].bytes > bands[b].bytes; });
    idx.resize(max_bands);
    std::sort(idx.begin(), idx.end());
    std::vector<BufferBand> kept;
    for (size_t i : idx) kept.push_back(bands[i]);
    bands = std::move(kept);
  }
  return bands;
}

int64_t baseAt(const BufferBand& band, int64_t t_ns) {
  int64_t base = band.base;
  for (const MemoryPoint& m : band.moves) {
    if (m.t_ns > t_ns) break;
    base = m.bytes;
  }
  return base;
}

std::vector<size_t> liveAt(const std::vector<BufferBand>& bands, int64_t t_ns) {
  std::vector<size_t> live;
  for (size_t i = 0; i < bands.size(); ++i)
    if (bands[i].start_ns <= t_ns && (!bands[i].freed || bands[i].end_ns >= t_ns)) live.push_back(i);
  std::stable_sort(live.begin(), live.end(), [&](size_t a, size_t b) { return bands[a].bytes > bands[b].bytes; });
  return live;
}

std::vector<BandPiece> piecesOf(const BufferBand& band) {
  std::vector<BandPiece> pieces;
  int64_t start = band.start_ns, base = band.base;
  auto add = [&](int64_t end) {
    if (end > start) pieces.push_back({start, end, base});
  };
  for (const MemoryPoint& m : band.moves) {
    if (m.t_ns >= band.end_ns) break;
    add(m.t_ns);
    start = std::max(start, m.t_ns);
    base = m.bytes;
  }
  add(band.end_ns);
  return pieces;
}

}  // namespace attnscope::ui
