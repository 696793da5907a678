#include "ui/timeline_lanes.h"

#include <algorithm>
#include <climits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

namespace attnscope::ui {

namespace {

bool isSetup(const std::string& phase) { return phase == "inputs" || phase.rfind("load inputs", 0) == 0; }

constexpr const char* kProfiled = "profiled call";

}  // namespace

std::vector<PassRange> passRanges(const std::vector<TraceEvent>& events, int warmup, int reps) {
  // One rank's phases: the ranks of a tensor-parallel run run the same passes at once, and their
  // phases overlap in time (the lowest device is rank 0).
  uint32_t device = UINT32_MAX;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) device = std::min(device, e.device);
  std::vector<const TraceEvent*> phases;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase && e.device == device) phases.push_back(&e);
  // By start; at one start the longer first, so an enclosing phase comes before what it holds.
  std::stable_sort(phases.begin(), phases.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->end_ns > b->end_ns;
  });
  // Each phase's first inner phase (the next by start, when wholly inside it), "" for none: a
  // stack's layer L1 runs twice a pass, its forward (qkv_proj first) and its backward, and only
  // the forward starts a pass.
  auto first_inner = [&](size_t i) {
    if (i + 1 >= phases.size()) return std::string();
    const TraceEvent* p = phases[i];
    const TraceEvent* q = phases[i + 1];
    const bool inside = q->start_ns >= p->start_ns && std::max(q->start_ns, q->end_ns) <= std::max(p->start_ns, p->end_ns);
    return inside ? q->name : std::string();
  };
  std::vector<PassRange> passes;
  std::string first, first_child;  // the phase that starts a pass, and its first inner phase
  std::set<std::string> first_pass;  // the top-level phase names of the first pass
  int64_t top_end = INT64_MIN;  // end of the top-level phase last seen
  int n = 0;
  for (size_t i = 0; i < phases.size(); ++i) {
    const TraceEvent* p = phases[i];
    const int64_t end = std::max(p->start_ns, p->end_ns);
    // Inside a top-level phase only when wholly inside it (core's phase summary nests by
    // containment too): a phase that begins a moment before the previous one has ended (a
    // backend opening "pv" while "softmax" is still being closed) follows it in the same pass.
    if (p->start_ns < top_end && end <= top_end) continue;
    top_end = end;
    if (isSetup(p->name)) continue;
    const bool profiled_open = !passes.empty() && passes.back().kind == PassRange::Kind::profiled;
    // By its name, or after the timed passes a phase that starts a pass or that no timed pass had
    // (torch's layer on a GPU: "layer call" timed, qkv_proj... profiled): the profiled call, one
    // pass to the end.
    const bool after_timed = reps >= 0 && n >= 1 && n == warmup + reps;
    const bool starts_pass = first.empty() || (p->name == first && first_inner(i) == first_child);
    if (!profiled_open &&
        (p->name == kProfiled || (after_timed && (starts_pass || (n > 1 && !first_pass.count(p->name)))))) {
      passes.push_back({kProfiled, p->start_ns, end, PassRange::Kind::profiled});
      continue;
    }
    if (first.empty()) {
      first = p->name;
      first_child = first_inner(i);
    }
    if (n <= 1) first_pass.insert(p->name);
    if (starts_pass && !profiled_open) {
      ++n;
      if (n <= warmup) passes.push_back({"warm-up " + std::to_string(n), p->start_ns, end, PassRange::Kind::warmup});
      else passes.push_back({"rep " + std::to_string(n - warmup), p->start_ns, end, PassRange::Kind::rep});
    } else if (!passes.empty()) {
      passes.back().end_ns = std::max(passes.back().end_ns, end);
    }
  }
  return passes;
}

std::vector<LaneLayout> layoutLanes(const std::vector<TraceEvent>& events, const std::vector<PassRange>& passes,
                                    int64_t t0_ns) {
  std::vector<LaneLayout> lanes;
  auto laneless = [](const TraceEvent& e) {
    return e.kind == EventKind::alloc || e.kind == EventKind::free || e.kind == EventKind::pool_reserve ||
           e.kind == EventKind::pool_release;
  };
  // The nesting depth of each kernel, copy, set or op within its stream: by start, the longer
  // first at one start, each inside the still-open events that wholly contain it.
  std::vector<int> depth(events.size(), 0);
  {
    using Stream = std::tuple<int, uint32_t, uint32_t>;
    std::map<Stream, std::vector<size_t>> by_stream;
    for (size_t i = 0; i < events.size(); ++i)
      if (!laneless(events[i]) && events[i].kind != EventKind::phase)
        by_stream[{static_cast<int>(events[i].source), events[i].device, events[i].stream}].push_back(i);
    for (auto& [stream, items] : by_stream) {
      std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) {
        if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
        return events[a].end_ns > events[b].end_ns;
      });
      std::vector<int64_t> open;  // the ends of the enclosing events, outermost first
      for (size_t i : items) {
        const int64_t end = std::max(events[i].start_ns, events[i].end_ns);
        while (!open.empty() && (open.back() <= events[i].start_ns || open.back() < end)) open.pop_back();
        depth[i] = std::min(static_cast<int>(open.size()), kMaxOpDepth - 1);
        open.push_back(end);
      }
    }
  }
  // (0, 0, rank, phase id, 0) for phases, (1, source, device, stream, depth) for the rest: the
  // map's order is the lanes' order. A stack's layers (L1..LN) share one lane, "layers". Phases on
  // several devices (a tensor-parallel run's ranks) get a few lanes per rank instead of one per
  // name, which would be dozens: its layers, the phases of a layer (or at top level), the phases
  // inside those, and its communication; each named on its slices.
  std::set<uint32_t> phase_devices;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) phase_devices.insert(e.device);
  const bool ranked = phase_devices.size() > 1;
  enum RankRow : uint32_t { kRankLayers, kRankPhases, kRankInside, kRankComm };
  std::vector<uint32_t> rank_row(events.size(), kRankPhases);
  if (ranked) {
    // Each phase's nesting within its rank, by containment as the phase summary nests, a layer's
    // own level not counted.
    std::map<uint32_t, std::vector<size_t>> by_rank;
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].kind == EventKind::phase) by_rank[events[i].device].push_back(i);
    for (auto& [rank, items] : by_rank) {
      std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) {
        if (events[a].start_ns != events[b].start_ns) return events[a].start_ns < events[b].start_ns;
        return events[a].end_ns > events[b].end_ns;
      });
      std::vector<std::pair<int64_t, bool>> open;  // enclosing phases' ends, and whether each is a layer
      for (size_t i : items) {
        const int64_t end = std::max(events[i].start_ns, events[i].end_ns);
        while (!open.empty() && (open.back().first <= events[i].start_ns || open.back().first < end)) open.pop_back();
        const bool in_layer = std::any_of(open.begin(), open.end(), [](const auto& o) { return o.second; });
        const bool layer = open.empty() && isLayerPhase(events[i].name);
        const size_t level = open.size() - (in_layer ? 1 : 0);
        rank_row[i] = isCommPhase(events[i].name) ? kRankComm : layer ? kRankLayers : level == 0 ? kRankPhases : kRankInside;
        open.emplace_back(end, layer);
      }
    }
  }
  std::map<std::tuple<int, int, uint32_t, uint32_t, int>, size_t> index;
  std::map<std::string, uint32_t> phase_ids;  // in order of first appearance
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (laneless(e)) continue;
    const bool phase = e.kind == EventKind::phase;
    const bool layer = phase && (ranked ? rank_row[i] == kRankLayers : isLayerPhase(e.name));
    static const char* const kRankLanes[] = {kLayersLane, "phases", "\u21b3 inside", "comm"};
    const std::string lane_name = ranked && phase ? kRankLanes[rank_row[i]] : layer ? std::string(kLayersLane) : e.name;
    const uint32_t phase_id =
        !phase ? 0u
        : ranked ? rank_row[i]
                 : phase_ids.try_emplace(lane_name, static_cast<uint32_t>(phase_ids.size())).first->second;
    const uint32_t rank = phase && ranked ? e.device : 0u;
    const auto key = std::tuple{phase ? 0 : 1, phase ? 0 : static_cast<int>(e.source), phase ? rank : e.device,
                                phase ? phase_id : e.stream, depth[i]};
    auto [it, fresh] = index.try_emplace(key, lanes.size());
    if (fresh) {
      LaneLayout lane;
      lane.kind = layer   ? LaneLayout::Kind::layers
                  : phase ? LaneLayout::Kind::phase
                          : e.source == EventSource::cupti ? LaneLayout::Kind::cuda_stream : LaneLayout::Kind::cpu_thread;
      if (phase) lane.phase = lane_name;
      lane.comm = phase && (ranked ? rank_row[i] == kRankComm : isCommPhase(e.name));
      lane.ranked = phase && ranked;
      lane.source = e.source;
      lane.device = phase ? rank : e.device;
      lane.stream = phase ? 0u : e.stream;
      lane.depth = depth[i];
      lanes.push_back(std::move(lane));
    }
    LaneLayout& lane = lanes[it->second];
    lane.intervals.push_back(
        {static_cast<double>(e.start_ns - t0_ns), static_cast<double>(std::max(e.end_ns, e.start_ns) - t0_ns)});
    lane.items.push_back(i);
  }
  std::vector<LaneLayout> sorted;
  if (!passes.empty()) {
    LaneLayout lane;
    lane.kind = LaneLayout::Kind::passes;
    for (size_t i = 0; i < passes.size(); ++i) {
      lane.intervals.push_back({static_cast<double>(passes[i].start_ns - t0_ns), static_cast<double>(passes[i].end_ns - t0_ns)});
      lane.items.push_back(i);
    }
    sorted.push_back(std::move(lane));
  }
  for (const auto& [key, at] : index) sorted.push_back(std::move(lanes[at]));
  for (LaneLayout& lane : sorted) {
    std::vector<size_t> perm(lane.intervals.size());
    std::iota(perm.begin(), perm.end(), size_t{0});
    std::stable_sort(perm.begin(), perm.end(),
                     [&](size_t a, size_t b) { return lane.intervals[a].start < lane.intervals[b].start; });
    std::vector<Interval> iv;
    std::vector<size_t> items;
    iv.reserve(perm.size());
    items.reserve(perm.size());
    for (size_t p : perm) {
      iv.push_back(lane.intervals[p]);
      items.push_back(lane.items[p]);
    }
    lane.intervals = std::move(iv);
    lane.items = std::move(items);
  }
  return sorted;
}

}  // namespace attnscope::ui
