#pragma once
// For one run: the plan's named buffers live at the predicted peak step as a stacked bar,
// beside the measured peak; every buffer of the plan listed with its bytes and lifetime. Under
// it the phases: core's phase summary of the picked run as a table (the rows `attnscope show R
// --phases` prints) and, for every point of the sweep, a bar of time shares per top-level phase
// (a nested phase such as "recompute/scores" is inside its parent's segment and a row of the
// table). Phase summaries are read from the stored traces by PhaseSummaries (ui/phase_summaries.h),
// on a pool thread in the window.

#include <cstdint>
#include <vector>

#include "ui/chart_view.h"
#include "ui/phase_summaries.h"

class QComboBox;
class QLabel;
class QTableWidget;

namespace attnscope::ui {

class BreakdownView : public ChartView {
  Q_OBJECT
 public:
  // At most this many points get a bar (the first ones of the sweeps, in order).
  static constexpr size_t kMaxPhaseBars = 40;
  // The memory bar stacks at most this many buffers apiece; smaller ones share one segment.
  static constexpr size_t kMaxSegments = 12;

  explicit BreakdownView(QWidget* parent = nullptr);
  QString title() const override { return tr("Breakdown"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_, phase_plot_}; }
  void selectRun(qint64 run_id) override;
  QComboBox* runBox() const { return run_; }

  // Where traces come from and whether they load on a pool thread (see PhaseSummaries).
  void setEventSource(PhaseSummaries::EventLoader source);
  void setBackgroundLoading(bool on) { phases_.setBackgroundLoading(on); }
  bool loadingPhases() const { return phases_.loading(); }
  const PhaseSummaries& phaseSummaries() const { return phases_; }
  QTableWidget* phaseTable() const { return phase_table_; }
  QCustomPlot* phasePlot() const { return phase_plot_; }
  // The runs that have a bar in the phase plot, left to right.
  const std::vector<int64_t>& phaseBarRuns() const { return bar_runs_; }

 private:
  void rebuild();
  void rebuildPhases();
  void requestPhases();
  const RunResult* current() const;
  QComboBox* run_;
  QCustomPlot* plot_;
  QLabel* buffers_;
  QCustomPlot* phase_plot_;
  QLabel* phase_title_;
  QTableWidget* phase_table_;
  PhaseSummaries phases_;
  std::vector<int64_t> bar_runs_;
};

}  // namespace attnscope::ui
