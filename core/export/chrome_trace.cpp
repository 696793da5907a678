#include "core/export/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "core/trace/memory_timeline.h"
#include "core/result/run_result.h"

namespace attnscope {
namespace {

constexpr int kPhaseTid = 1;
constexpr int kMarkerTid = 2;  // phase ranges reported by CUPTI (NVTX), kept apart from host phases
constexpr int kFirstStreamTid = 10;

double micros(int64_t t_ns, int64_t t0_ns) { return static_cast<double>(t_ns - t0_ns) / 1000.0; }

nlohmann::json meta(const char* what, int pid, int tid, const nlohmann::json& args) {
  nlohmann::json m = {{"ph", "M"}, {"name", what}, {"pid", pid}, {"args", args}};
  if (tid >= 0) m["tid"] = tid;
  return m;
}

std::string trackName(EventSource source, uint32_t device, uint32_t stream) {
  if (source == EventSource::cupti) return "cuda:" + std::to_string(device) + " stream " + std::to_string(stream);
  return std::string(source == EventSource::host ? "cpu" : "allocator") + " thread " + std::to_string(stream);
}

nlohmann::json activityArgs(const TraceEvent& e) {
  nlohmann::json a;
  if (e.kind == EventKind::kernel) {
    const KernelInfo& k = e.kernel;
    a["grid"] = {k.grid[0], k.grid[1], k.grid[2]};
    a["block"] = {k.block[0], k.block[1], k.block[2]};
    a["registers"] = k.registers;
    a["static_smem"] = k.static_smem;
    a["dynamic_smem"] = k.dynamic_smem;
  } else {
    a["bytes"] = e.bytes;
  }
  a["stream"] = e.stream;
  a["device"] = e.device;
  if (e.correlation) a["correlation"] = e.correlation;
  a["source"] = std::string(toString(e.source));
  return a;
}

void appendRun(const TraceRun& run, int pid, nlohmann::json& out) {
  const auto& events = run.events;
  int64_t t0 = std::numeric_limits<int64_t>::max();
  for (const TraceEvent& e : events) t0 = std::min(t0, e.start_ns);
  if (events.empty()) t0 = 0;

  out.push_back(meta("process_name", pid, -1, {{"name", run.label}}));
  out.push_back(meta("process_sort_index", pid, -1, {{"sort_index", pid}}));

  // Tracks: assign thread ids in a stable order (source, device, stream).
  std::map<std::tuple<EventSource, uint32_t, uint32_t>, int> streams;
  bool host_phases = false, marker_phases = false;
  for (const TraceEvent& e : events) {
    if (e.kind == EventKind::phase) {
      (e.source == EventSource::cupti ? marker_phases : host_phases) = true;
    } else if (e.kind == EventKind::kernel || e.kind == EventKind::memcpy || e.kind == EventKind::memset) {
      streams.emplace(std::make_tuple(e.source, e.device, e.stream), 0);
    }
  }
  auto thread = [&](int tid, const std::string& name) {
    out.push_back(meta("thread_name", pid, tid, {{"name", name}}));
    out.push_back(meta("thread_sort_index", pid, tid, {{"sort_index", tid}}));
  };
  if (host_phases) thread(kPhaseTid, "phases");
  if (marker_phases) thread(kMarkerTid, "NVTX ranges");
  int next = kFirstStreamTid;
  for (auto& [key, tid] : streams) {
    tid = next++;
    thread(tid, trackName(std::get<0>(key), std::get<1>(key), std::get<2>(key)));
  }

  // Time order, longer first at equal starts, so nested ranges open outer to inner.
  std::vector<const TraceEvent*> order;
  order.reserve(events.size());
  for (const TraceEvent& e : events) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const TraceEvent* a, const TraceEvent* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    return a->end_ns > b->end_ns;
  });
  for (const TraceEvent* e : order) {
    int tid = 0;
    const char* cat = nullptr;
    switch (e->kind) {
      case EventKind::phase:
        tid = e->source == EventSource::cupti ? kMarkerTid : kPhaseTid;
        cat = "phase";
        break;
      case EventKind::kernel:
      case EventKind::memcpy:
      case EventKind::memset:
        tid = streams.at(std::make_tuple(e->source, e->device, e->stream));
        cat = e->kind == EventKind::kernel ? "kernel" : (e->kind == EventKind::memcpy ? "memcpy" : "memset");
        break;
      default:
        continue;  // memory events become counters below
    }
    nlohmann::json x = {{"ph", "X"},
                        {"cat", cat},
                        {"name", e->name.empty() ? std::string(cat) : e->name},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", micros(e->start_ns, t0)},
                        {"dur", micros(std::max(e->end_ns, e->start_ns), e->start_ns)}};
    if (e->kind != EventKind::phase) x["args"] = activityArgs(*e);
    out.push_back(std::move(x));
  }

  // Counters: one live-bytes series per (source, memory kind); pool memory counts as device.
  std::map<std::pair<EventSource, MemoryKind>, bool> series;  // value: has pool events
  for (const TraceEvent& e : events) {
    MemoryKind kind = e.memory == MemoryKind::pool ? MemoryKind::device : e.memory;
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) series.try_emplace({e.source, kind}, false);
    if (e.kind == EventKind::pool_reserve || e.kind == EventKind::pool_release) series[{e.source, kind}] = true;
  }
  for (const auto& [key, has_pool] : series) {
    MemoryTimeline tl(events, MemoryFilter{key.first, key.second, std::nullopt});
    const std::string suffix = std::string(toString(key.first)) + ", " + std::string(toString(key.second)) + ")";
    for (const MemoryPoint& p : tl.curve())
      out.push_back({{"ph", "C"}, {"name", "live bytes (" + suffix}, {"pid", pid}, {"tid", 0},
                     {"ts", micros(p.t_ns, t0)}, {"args", {{"bytes", p.bytes}}}});
    if (has_pool)
      for (const MemoryPoint& p : tl.poolCurve())
        out.push_back({{"ph", "C"}, {"name", "pool reserved (" + suffix}, {"pid", pid}, {"tid", 0},
                       {"ts", micros(p.t_ns, t0)}, {"args", {{"bytes", p.bytes}}}});
  }
}

}  // namespace

std::string traceRunLabel(const RunResult& r) {
  std::string label = r.backend + " " + summary(r.spec);
  if (r.id > 0) label += " (run " + std::to_string(r.id) + ")";
  return label;
}

TraceRun traceRunOf(const RunResult& r) { return TraceRun{traceRunLabel(r), r.trace.events}; }

nlohmann::json chromeTrace(const std::vector<TraceRun>& runs) {
  nlohmann::json events = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) appendRun(runs[i], static_cast<int>(i) + 1, events);
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"generator", "AttnScope"}, {"runs", runs.size()}}}};
}

}  // namespace attnscope
