#include "ui/phase_summaries.h"
#include "ui/chart_math.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

#include "core/base/format.h"

namespace attnscope::ui {

QStringList phaseHeaders() {
  return {QObject::tr("phase"), QObject::tr("count"), QObject::tr("total"), QObject::tr("mean"), QObject::tr("share"),
          QObject::tr("peak memory")};
}

QStringList phaseCells(const PhaseStats& p) {
  // The formatting of `attnscope show R --phases` (app/commands_store.cpp), so both read alike.
  char share[16];
  std::snprintf(share, sizeof share, "%.1f %%", 100.0 * p.share);
  return {QString(2 * p.depth, ' ') + QString::fromStdString(p.name), QString::number(p.count),
          QString::fromStdString(durationText(static_cast<double>(p.total_ns) * 1e-9)),
          QString::fromStdString(durationText(static_cast<double>(p.meanNs()) * 1e-9)), QString::fromLatin1(share),
          QString::fromStdString(formatBytes(p.peak_bytes))};
}

std::vector<PhaseSegment> phaseSegments(const std::vector<PhaseStats>& rows) {
  // The first part of a path and, inside a layer, the second: which segment a row belongs to.
  auto parts = [](const std::string& name) {
    std::vector<std::string> out;
    size_t from = 0;
    for (size_t at; (at = name.find('/', from)) != std::string::npos; from = at + 1) out.push_back(name.substr(from, at - from));
    out.push_back(name.substr(from));
    return out;
  };
  std::vector<PhaseSegment> out;
  std::map<std::string, size_t> index;  // key -> segment
  auto segment = [&](const std::string& group, const std::string& phase) -> PhaseSegment& {
    const std::string key = group.empty() ? phase : group + "/" + phase;
    auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) {
      PhaseSegment s;
      s.group = group;
      s.phase = phase;
      out.push_back(std::move(s));
    }
    return out[it->second];
  };
  // The traced passes: the fewest occurrences of a phase that runs once a pass (top level other
  // than setting up, or directly inside a layer). A layer runs twice a pass in training (its
  // forward, then its backward), so its own count is no pass count.
  int64_t passes = 0;
  for (const PhaseStats& p : rows) {
    const auto path = parts(p.name);
    const bool once_a_pass = (p.depth == 0 && !isLayerPhase(p.name) && p.name != "inputs" && !isCommPhase(p.name)) ||
                             (p.depth == 1 && path.size() == 2 && isLayerPhase(path[0]) && !isCommPhase(p.name));
    if (once_a_pass && p.count > 0) passes = passes == 0 ? p.count : std::min(passes, p.count);
  }
  passes = std::max<int64_t>(passes, 1);
  std::map<std::string, int64_t> layer_total, layer_inside, layer_peak;  // a layer's time, and inside its phases
  for (const PhaseStats& p : rows) {
    const auto path = parts(p.name);
    if (path.size() != static_cast<size_t>(p.depth) + 1) continue;  // a name with a '/' of its own: as core nests
    const bool in_layer = isLayerPhase(path[0]) && path.size() >= 2;
    if (p.depth == 0 && isLayerPhase(p.name)) {
      // Its segments are its phases, added as they come; what they leave is "other".
      bool has_inner = false;
      for (const PhaseStats& q : rows) has_inner = has_inner || (q.depth == 1 && q.name.rfind(p.name + "/", 0) == 0);
      if (has_inner) {
        layer_total[p.name] = p.total_ns;
        layer_peak[p.name] = p.peak_bytes;
        continue;
      }
    }
    const size_t own = in_layer ? 1 : 0;  // the depth of the row's segment
    // Communication inside a segment: counted apart, taken out of that segment (only the
    // outermost comm: a comm inside a comm is already in it).
    if (isCommPhase(p.name)) {
      bool outer = true;
      for (size_t k = 0; k + 1 < path.size(); ++k) outer = outer && path[k] != "comm";
      if (!outer) continue;
      PhaseSegment& c = segment(in_layer ? path[0] : std::string(), kCommSegment);
      c.count = passes;
      c.total_ns += p.total_ns;
      c.peak_bytes = std::max(c.peak_bytes, p.peak_bytes);
      if (static_cast<size_t>(p.depth) > own) {
        std::string holder = path[0];
        if (in_layer) holder += "/" + path[1];
        for (PhaseSegment& s : out)
          if (s.key() == holder) s.total_ns -= p.total_ns;
      } else if (in_layer) {
        layer_inside[path[0]] += p.total_ns;
      }
      continue;
    }
    if (static_cast<size_t>(p.depth) != own) continue;  // inside a segment: part of it
    PhaseSegment& s = segment(in_layer ? path[0] : std::string(), in_layer ? path[1] : path[0]);
    s.count = p.count;
    s.total_ns += p.total_ns;
    s.peak_bytes = std::max(s.peak_bytes, p.peak_bytes);
    if (in_layer) layer_inside[path[0]] += p.total_ns;
  }
  // Each layer's time outside its phases, after its last segment.
  for (const auto& [layer, total] : layer_total) {
    const int64_t rest = total - layer_inside[layer];
    if (rest <= 0) continue;
    size_t last = out.size();
    for (size_t i = 0; i < out.size(); ++i)
      if (out[i].group == layer) last = i + 1;
    PhaseSegment s;
    s.group = layer;
    s.phase = kLayerOtherSegment;
    s.count = passes;
    s.total_ns = rest;
    s.peak_bytes = layer_peak[layer];
    out.insert(out.begin() + static_cast<long>(std::min(last, out.size())), std::move(s));
  }
  int64_t top = 0;
  for (const PhaseStats& p : rows)
    if (p.depth == 0) top += p.total_ns;
  for (PhaseSegment& s : out) {
    s.total_ns = std::max<int64_t>(0, s.total_ns);
    s.share = top > 0 ? static_cast<double>(s.total_ns) / static_cast<double>(top) : 0.0;
  }
  // Phases of a layer that overlap a little (one opened while the last is being closed) add up to
  // more than the layer: their shares are scaled to the layer's, so the bar stays at 100 %.
  for (const auto& [layer, total] : layer_total) {
    const int64_t inside = layer_inside[layer];
    if (inside <= total || inside <= 0) continue;
    const double scale = static_cast<double>(total) / static_cast<double>(inside);
    for (PhaseSegment& s : out)
      if (s.group == layer) s.share *= scale;
  }
  return out;
}

std::vector<std::string> segmentColumns(const std::vector<std::vector<PhaseSegment>>& runs) {
  std::vector<std::string> order;  // keys, each run's order merged in
  std::map<std::string, std::string> group_of;
  for (const auto& segments : runs) {
    std::string before;  // the run's previous key
    for (const PhaseSegment& seg : segments) {
      const std::string key = seg.key();
      if (std::find(order.begin(), order.end(), key) == order.end()) {
        auto at = before.empty() ? order.end() : std::find(order.begin(), order.end(), before);
        order.insert(at == order.end() ? order.end() : at + 1, key);
        group_of[key] = seg.group;
      }
      before = key;
    }
  }
  auto rank = [&](const std::string& key) {
    const std::string& g = group_of[key];
    return g.empty() ? 0 : std::stoi(g.substr(1));
  };
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  return order;
}

std::vector<RankPhases> rankPhases(const std::vector<TraceEvent>& events) {
  std::set<uint32_t> devices;
  for (const TraceEvent& e : events)
    if (e.kind == EventKind::phase) devices.insert(e.device);
  if (devices.size() <= 1) return {{devices.empty() ? 0u : *devices.begin(), summarizePhases(events)}};
  std::vector<RankPhases> out;
  for (uint32_t d : devices) {
    std::vector<TraceEvent> mine;
    for (const TraceEvent& e : events)
      if (e.device == d) mine.push_back(e);
    out.push_back({d, summarizePhases(mine)});
  }
  return out;
}

std::vector<const RunResult*> representativeRuns(const SweepSnapshots& sweeps, size_t limit) {
  std::vector<const RunResult*> out;
  std::map<std::string, size_t> index;  // backend + kind + pass + checkpoint -> slot in out
  for (const auto& s : sweeps) {
    if (!s) continue;
    for (const RunResult& r : s->runs) {
      if (r.status != RunStatus::ok) continue;
      const std::string key = std::to_string(s->info.id) + "|" + r.backend + "|" + std::string(toString(r.spec.kind)) +
                              "|" + std::string(toString(r.spec.pass)) + "|" + std::string(toString(r.spec.checkpoint));
      auto [it, fresh] = index.try_emplace(key, out.size());
      if (fresh) out.push_back(&r);
      else if (r.memory.measured_peak > out[it->second]->memory.measured_peak) out[it->second] = &r;
    }
  }
  if (out.size() > limit) out.resize(limit);
  return out;
}

void PhaseSummaries::setEventSource(EventLoader source) {
  source_ = std::move(source);
  source_jobs_.startJob();
  pending_ = 0;
  done_.clear();
  asked_.clear();
}

PhaseSummaries::Loaded PhaseSummaries::load(const EventLoader& source, int64_t run_id) {
  Loaded out;
  try {
    const std::vector<TraceEvent> events = source(run_id);
    out.phases = summarizePhases(events);  // the rows `attnscope show R --phases` prints
    out.ranks = rankPhases(events);
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

void PhaseSummaries::request(const std::vector<int64_t>& run_ids) {
  std::vector<int64_t> missing;
  for (int64_t id : run_ids)
    if (id > 0 && asked_.emplace(id, true).second) missing.push_back(id);
  if (missing.empty() || !source_) return;
  if (!background_) {
    for (int64_t id : missing) done_[id] = load(source_, id);
    Q_EMIT ready();
    return;
  }
  ++pending_;
  QPointer<PhaseSummaries> self(this);
  const quint64 generation = source_jobs_.current();
  QThreadPool::globalInstance()->start([self, source = source_, missing, generation] {
    // One trace in memory at a time: each is summarised and dropped before the next is read.
    auto loaded = std::make_shared<std::map<int64_t, Loaded>>();
    for (int64_t id : missing) (*loaded)[id] = load(source, id);
    QMetaObject::invokeMethod(qApp, [self, loaded, generation] {
      if (!self || !self->source_jobs_.isCurrent(generation)) return;  // gone, or another database by now
      --self->pending_;
      for (auto& [id, l] : *loaded) self->done_[id] = std::move(l);
      Q_EMIT self->ready();
    }, Qt::QueuedConnection);
  });
}

const std::vector<PhaseStats>* PhaseSummaries::find(int64_t run_id) const {
  auto it = done_.find(run_id);
  return it == done_.end() || !it->second.error.isEmpty() ? nullptr : &it->second.phases;
}

const std::vector<RankPhases>* PhaseSummaries::findRanks(int64_t run_id) const {
  auto it = done_.find(run_id);
  return it == done_.end() || !it->second.error.isEmpty() ? nullptr : &it->second.ranks;
}

QString PhaseSummaries::error(int64_t run_id) const {
  auto it = done_.find(run_id);
  return it == done_.end() ? QString() : it->second.error;
}

}  // namespace attnscope::ui
