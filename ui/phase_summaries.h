#pragma once
// The per-phase breakdown of runs for the Breakdown view and the report: core's phase summary
// (core/trace/phase_summary.h, the same rows `attnscope show R --phases` prints) of each run, read from
// the stored trace and kept per run id. Nothing here computes phases itself.
//
// PhaseSummaries loads on a pool thread when background loading is on (the window: a sweep's
// traces can be large) and on the calling thread otherwise (the report, headless export, tests).

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <QObject>
#include <QStringList>

#include "core/trace/phase_summary.h"
#include "core/trace/trace_event.h"
#include "ui/job_tracker.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// The cells of one row as the CLI prints them: phase (indented two spaces per depth), count,
// total, mean, share ("12.5 %"), peak memory.
QStringList phaseCells(const PhaseStats& p);
QStringList phaseHeaders();  // "phase", "count", "total", "mean", "share", "peak memory"


// Runs worth a phase table when not every point fits: per backend and value of kind, pass and
// checkpoint, the finished run with the largest measured peak, in sweep order; at most `limit`.
std::vector<const RunResult*> representativeRuns(const SweepSnapshots& sweeps, size_t limit);

class PhaseSummaries : public QObject {
  Q_OBJECT
 public:
  using EventLoader = std::function<std::vector<TraceEvent>(int64_t run_id)>;
  explicit PhaseSummaries(QObject* parent = nullptr) : QObject(parent) {}

  // A new source (another database) forgets every summary: run ids are per database. With
  // background loading on, the loader runs on a pool thread and must not touch GUI state.
  void setEventSource(EventLoader source);
  void setBackgroundLoading(bool on) { background_ = on; }

  // Makes sure these runs are summarised: at once without background loading, else on a pool
  // thread, emitting ready() when they are in. Runs already known are not loaded again.
  void request(const std::vector<int64_t>& run_ids);
  // nullptr while not loaded (or when its trace could not be read: see error()).
  const std::vector<PhaseStats>* find(int64_t run_id) const;
  QString error(int64_t run_id) const;
  bool loading() const { return pending_ > 0; }

 Q_SIGNALS:
  void ready();

 private:
  struct Loaded {
    std::vector<PhaseStats> phases;
    QString error;
  };
  static Loaded load(const EventLoader& source, int64_t run_id);
  EventLoader source_;
  bool background_ = false;
  JobTracker source_jobs_;  // a job per event source: results of an older source are dropped
  int pending_ = 0;         // background jobs of this generation not back yet
  std::map<int64_t, Loaded> done_;
  std::map<int64_t, bool> asked_;  // requested (loaded or on its way)
};

}  // namespace attnscope::ui
