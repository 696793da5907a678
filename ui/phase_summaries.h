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
#include <string_view>
#include <vector>

#include <QObject>
#include <QStringList>

#include "core/trace/phase_summary.h"
#include "core/trace/trace_event.h"
#include "ui/job_tracker.h"
#include "ui/phase_names.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// The cells of one row as the CLI prints them: phase (indented two spaces per depth), count,
// total, mean, share ("12.5 %"), peak memory.
QStringList phaseCells(const PhaseStats& p);
QStringList phaseHeaders();  // "phase", "count", "total", "mean", "share", "peak memory"


// One segment of a run's stacked phase bar (Breakdown). The top-level phases, except that a
// stack's layer (L<n>) is split into the phases directly inside it, so a bar shows each layer as
// a group of its qkv_proj, attention, ..., backward steps and recompute, plus "other" for the
// layer's time outside them; and communication ("comm" at any depth) is a segment of its own,
// "communication", taken out of the segment it was inside. Segments add up to the top-level
// phases' total, so their shares add up to 100 % (a layer's phases that overlap a little, adding
// up to more than the layer, have their shares scaled to the layer's).
struct PhaseSegment {
  std::string group;     // "L3" inside a layer, else ""
  std::string phase;     // "attention", "communication", "other"
  int64_t count = 0;     // occurrences (a layer's "other": the traced passes)
  int64_t total_ns = 0;
  double share = 0;      // of the top-level phases' total (0..1)
  int64_t peak_bytes = 0;
  int64_t meanNs() const { return count > 0 ? total_ns / count : 0; }
  // "L3/attention", or the phase alone outside a layer: unique within one run's segments.
  std::string key() const { return group.empty() ? phase : group + "/" + phase; }
};
inline constexpr const char* kCommSegment = "communication";
inline constexpr const char* kLayerOtherSegment = "other";
std::vector<PhaseSegment> phaseSegments(const std::vector<PhaseStats>& rows);
// The stacking order of several runs' segments (one bar each): every key once, what is outside a
// layer first, then L1, L2, ... each a contiguous band, and within each the keys in every run's own
// order (a key one run lacks goes right after the key before it in the run that has it:
// cpu.reference's scores, softmax, pv where cpu.flash has attention).
std::vector<std::string> segmentColumns(const std::vector<std::vector<PhaseSegment>>& runs);

// A tensor-parallel run's phases per rank: its events split by TraceEvent::device where its phases
// are on more than one device (each rank summarised on its own: ranks run at once and their
// phases overlap in time), else one entry of every event. Each rank's rows are core's
// summarizePhases of that rank's events.
struct RankPhases {
  uint32_t device = 0;
  std::vector<PhaseStats> phases;
};
std::vector<RankPhases> rankPhases(const std::vector<TraceEvent>& events);
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
  // nullptr while not loaded (or when its trace could not be read: see error()). Core's summary of
  // the whole trace, as the CLI prints it (a tensor-parallel run's ranks added up by name).
  const std::vector<PhaseStats>* find(int64_t run_id) const;
  // The run's phases per rank (one entry unless it ran on several devices); nullptr as find().
  const std::vector<RankPhases>* findRanks(int64_t run_id) const;
  QString error(int64_t run_id) const;
  bool loading() const { return pending_ > 0; }

 Q_SIGNALS:
  void ready();

 private:
  struct Loaded {
    std::vector<PhaseStats> phases;
    std::vector<RankPhases> ranks;
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
