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
  std::vector<const TraceEvent*> phases;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) phases.push_back(&e);
  // By start; at one start the longer first, so an enclosing phase comes before what it holds.
  std::stable_sort(phases.begin(), phases.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->end_ns > b->end_ns;
  });
  std::vector<PassRange> passes;
  std::string first;
  std::set<std::string> first_pass;  // the top-level phase names of the first pass
  int64_t top_end = INT64_MIN;  // end of the top-level phase last seen
  int n = 0;
  for (const TraceEvent* p : phases) {
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
    if (!profiled_open &&
        (p->name == kProfiled || (after_timed && (p->name == first || (n > 1 && !first_pass.count(p->name)))))) {
      passes.push_back({kProfiled, p->start_ns, end, PassRange::Kind::profiled});
      continue;
    }
    if (first.empty()) first = p->name;
    if (n <= 1) first_pass.insert(p->name);
    if (p->name == first && !profiled_open) {
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
  // (0, 0, 0, phase id, 0) for phases, (1, source, device, stream, depth) for the rest: the map's
  // order is the lanes' order.
  std::map<std::tuple<int, int, uint32_t, uint32_t, int>, size_t> index;
  std::map<std::string, uint32_t> phase_ids;  // in order of first appearance
  for (size_t i = 0; i < events.size(); ++i) {
    const TraceEvent& e = events[i];
    if (laneless(e)) continue;
    const bool phase = e.kind == EventKind::phase;
    const uint32_t phase_id =
        phase ? phase_ids.try_emplace(e.name, static_cast<uint32_t>(phase_ids.size())).first->second : 0u;
    const auto key = std::tuple{phase ? 0 : 1, phase ? 0 : static_cast<int>(e.source), phase ? 0u : e.device,
                                phase ? phase_id : e.stream, depth[i]};
    auto [it, fresh] = index.try_emplace(key, lanes.size());
    if (fresh) {
      LaneLayout lane;
      lane.kind = phase ? LaneLayout::Kind::phase
                        : e.source == EventSource::cupti ? LaneLayout::Kind::cuda_stream : LaneLayout::Kind::cpu_thread;
      if (phase) lane.phase = e.name;
      lane.source = e.source;
      lane.device = phase ? 0u : e.device;
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
