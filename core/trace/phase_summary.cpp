#include "core/trace/phase_summary.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "core/trace/memory_timeline.h"

namespace attnscope {

std::vector<PhaseStats> summarizePhases(const std::vector<TraceEvent>& events) {
  const bool allocator = std::any_of(events.begin(), events.end(), [](const TraceEvent& e) {
    return e.source == EventSource::allocator && (e.kind == EventKind::alloc || e.kind == EventKind::free);
  });
  const MemoryFilter filter = allocator ? MemoryFilter{EventSource::allocator, std::nullopt, std::nullopt}
                                        : MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt};
  std::vector<PhaseStats> rows;
  std::map<std::string, size_t> index;
  // The occurrences of one device's phases, nested among themselves, with that device's memory.
  auto add = [&](const std::vector<TraceEvent>& evs, std::optional<uint32_t> device) {
    MemoryFilter mine = filter;
    mine.device = device;
    const MemoryTimeline timeline(evs, mine);
    const std::vector<PhasePeak>& phases = timeline.phasePeaks();  // in start order
    // The innermost phase holding occurrence p, or -1 (ties of equal ranges: the earlier holds).
    auto parentOf = [&](size_t p) {
      long best = -1;
      for (size_t q = 0; q < phases.size(); ++q) {
        if (q == p) continue;
        const int64_t lq = phases[q].end_ns - phases[q].start_ns, lp = phases[p].end_ns - phases[p].start_ns;
        const bool holds = phases[q].start_ns <= phases[p].start_ns && phases[p].end_ns <= phases[q].end_ns &&
                           (lq > lp || q < p);
        if (holds && (best < 0 || lq < phases[best].end_ns - phases[best].start_ns)) best = static_cast<long>(q);
      }
      return best;
    };
    for (size_t p = 0; p < phases.size(); ++p) {
      const PhasePeak& ph = phases[p];
      // A nested occurrence is its own row, "parent/name", so a recomputed "scores" is not counted
      // with the forward's.
      std::string name = ph.name;
      int depth = 0;
      for (long q = parentOf(p); q >= 0 && depth < 8; q = parentOf(static_cast<size_t>(q)), ++depth)
        name = phases[static_cast<size_t>(q)].name + "/" + name;
      auto [it, added] = index.emplace(name, rows.size());
      if (added) {
        PhaseStats s;
        s.name = name;
        s.depth = depth;
        rows.push_back(s);
      }
      PhaseStats& s = rows[it->second];
      ++s.count;
      s.total_ns += std::max<int64_t>(0, ph.end_ns - ph.start_ns);
      s.peak_bytes = std::max(s.peak_bytes, ph.peak_bytes);
    }
  };
  // A tensor-parallel run holds each rank's phases and memory on its own device (TraceEvent::
  // device). They overlap in time: each rank's phases nest only among themselves, and a phase's
  // peak is its rank's memory. One device (every other run) is taken as it is.
  std::set<uint32_t> devices;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) devices.insert(e.device);
  if (devices.size() <= 1) {
    add(events, std::nullopt);
  } else {
    for (uint32_t d : devices) {
      std::vector<TraceEvent> one;
      for (const TraceEvent& e : events)
        if (e.kind != EventKind::phase || e.device == d) one.push_back(e);
      add(one, d);
    }
  }
  int64_t top = 0;
  for (const auto& s : rows)
    if (s.depth == 0) top += s.total_ns;
  for (auto& s : rows) s.share = top > 0 ? static_cast<double>(s.total_ns) / static_cast<double>(top) : 0.0;
  // Tree order: each row right after its parent's earlier children, children in the order they
  // first start. A stack's layer runs twice (forward, then backward much later), and its backward
  // phases belong under it, not after the last layer's.
  std::map<std::string, std::vector<size_t>> children;
  std::vector<size_t> roots;
  for (size_t i = 0; i < rows.size(); ++i) {
    const size_t slash = rows[i].name.rfind('/');
    if (rows[i].depth == 0 || slash == std::string::npos || !index.count(rows[i].name.substr(0, slash)))
      roots.push_back(i);
    else
      children[rows[i].name.substr(0, slash)].push_back(i);
  }
  std::vector<PhaseStats> ordered;
  ordered.reserve(rows.size());
  auto visit = [&](auto&& self, size_t i) -> void {
    ordered.push_back(rows[i]);
    if (auto it = children.find(rows[i].name); it != children.end())
      for (size_t c : it->second) self(self, c);
  };
  for (size_t r : roots) visit(visit, r);
  return ordered;
}

PhaseMatrix phaseMatrix(const std::vector<std::vector<PhaseStats>>& runs) {
  PhaseMatrix m;
  std::map<std::string, size_t> column;
  for (const auto& run : runs)
    for (const auto& s : run)
      if (s.depth == 0 && column.emplace(s.name, m.names.size()).second) m.names.push_back(s.name);
  for (const auto& run : runs) {
    std::vector<std::optional<PhaseStats>> row(m.names.size());
    for (const auto& s : run)
      if (s.depth == 0) row[column.at(s.name)] = s;
    m.cells.push_back(std::move(row));
  }
  return m;
}

nlohmann::json toJson(const std::vector<PhaseStats>& phases) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : phases)
    out.push_back({{"name", s.name}, {"depth", s.depth}, {"count", s.count}, {"total_ns", s.total_ns},
                   {"mean_ns", s.meanNs()}, {"share", s.share}, {"peak_bytes", s.peak_bytes}});
  return out;
}

}  // namespace attnscope
