#pragma once
// For one run: the plan's named buffers live at the predicted peak step as a stacked bar,
// beside the measured peak (a tensor-parallel run's: each rank's); every buffer of the plan listed
// with its bytes and lifetime. Under it the phases: core's phase summary of the picked run as a
// table (the rows `attnscope show R --phases` prints) and, for every point of the sweep (a
// tensor-parallel point: each rank, summarised on its own), a bar of time shares per
// top-level phase (a nested phase such as "recompute/scores" is inside its parent's segment and a
// row of the table). A stack's layers (L1..LN) are bands of the bar, each stacking its own phases,
// and communication is a hatched segment of its own (phaseSegments in ui/phase_summaries.h). Phase summaries are read from the stored traces by PhaseSummaries (ui/phase_summaries.h),
// on a pool thread in the window.

#include <cstdint>
#include <vector>

#include <QString>

#include "ui/chart_view.h"
#include "ui/phase_summaries.h"

class QComboBox;
class QCPItemText;
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
  // What the phase bars stack: each top-level phase's share of the run (%), or its time per
  // traced pass (the phase's mean), so points of different cost compare in absolute time.
  enum class PhaseScale { share, time };
  void setPhaseScale(PhaseScale scale);
  PhaseScale phaseScale() const { return scale_; }
  QComboBox* phaseScaleBox() const { return scale_box_; }
  // Every how many bars a point is labelled: 1 while the labels fit side by side; more when the
  // bars are narrower than a label, so that labels never overprint (the others stay in the
  // tooltip).
  int phaseLabelStride() const { return label_stride_; }
  // The tooltip text of bar `bar`'s segment `key` (PhaseSegment::key: "attention", "L2/attention";
  // each bar's QCPBars carries it as property "phaseKey"): what the hover shows.
  QString phaseTip(size_t bar, const QString& key) const;
  // Every bar's segments, left to right (empty while its phases load).
  const std::vector<std::vector<PhaseSegment>>& phaseBarSegments() const { return bar_segments_; }
  // The layer names written on the bars' layer bands ("L1".."L4"), those with room to show.
  QStringList shownLayerLabels() const;

 private:
  void rebuild();
  void rebuildPhases();
  void requestPhases();
  void updateLabelStride();
  const RunResult* current() const;
  QComboBox* run_;
  QCustomPlot* plot_;
  QLabel* buffers_;
  QCustomPlot* phase_plot_;
  QLabel* phase_title_;
  QTableWidget* phase_table_;
  PhaseSummaries phases_;
  std::vector<int64_t> bar_runs_;
  std::vector<QString> bar_labels_;  // every bar's axis label, left to right
  std::vector<QString> bar_titles_;  // and its run in words: "R15 cpu.flash H8 L512 train"
  std::vector<std::vector<PhaseSegment>> bar_segments_;  // every bar's segments (empty: loading)
  struct LayerLabel {
    QCPItemText* item;
    double lo, hi;  // the layer's band on the bar, in the value axis' units
  };
  std::vector<LayerLabel> layer_labels_;
  QComboBox* scale_box_;
  PhaseScale scale_ = PhaseScale::share;
  int label_stride_ = 1;
};

}  // namespace attnscope::ui
