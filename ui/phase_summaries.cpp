#include "ui/phase_summaries.h"
#include "ui/chart_math.h"

#include <algorithm>
#include <cstdio>

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
    out.phases = summarizePhases(source(run_id));
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

QString PhaseSummaries::error(int64_t run_id) const {
  auto it = done_.find(run_id);
  return it == done_.end() ? QString() : it->second.error;
}

}  // namespace attnscope::ui
