#pragma once
// The base of every chart tab: takes sweep snapshots, owns one or more QCustomPlots, follows
// palette changes, and shows hover tooltips. Export renders plots() in a row.

#include <functional>

#include <QList>
#include <QWidget>

#include "ui/sweep_snapshot.h"

class QCustomPlot;
class QCPGraph;

namespace attnscope::ui {

class ChartView : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  virtual QString title() const = 0;
  virtual void setSweeps(const SweepSnapshots& sweeps) = 0;
  const SweepSnapshots& sweeps() const { return sweeps_; }
  virtual QList<QCustomPlot*> plots() const = 0;
  // Plots per row when exported (all in one row by default).
  virtual int exportColumns() const { return static_cast<int>(plots().size()); }
  // A run picked elsewhere (results table); views that show one run switch to it.
  virtual void selectRun(qint64 run_id) { Q_UNUSED(run_id); }
  // Completes on this thread what the view computes in the background (the report and an export
  // paint right after setSweeps).
  virtual void finishPending() {}

  // Tooltip text for the data point `index` of `graph`; empty for none.
  using HoverText = std::function<QString(QCPGraph* graph, int index)>;
  // Shows hover tooltips for the graph point nearest the mouse (within 12 px). With pick, a click
  // (press and release within 4 px) on a point of a graph with property "runIds" calls pick with
  // that point's run id.
  using PickRun = std::function<void(qint64 run_id)>;
  static void installHover(QCustomPlot* plot, HoverText text, PickRun pick = {});
  // The graph point nearest pos within 12 px; false when none.
  static bool nearestPoint(QCustomPlot* plot, QPointF pos, QCPGraph** graph, int* index);
  static QCustomPlot* makePlot(QWidget* parent);

 Q_SIGNALS:
  // The user picked a run in this view (Breakdown's or Timeline's chooser): the window shows it
  // in the other per-run views too.
  void runPicked(qint64 run_id);

 protected:
  void changeEvent(QEvent* event) override;
  virtual void applyTheme();
  SweepSnapshots sweeps_;
};

}  // namespace attnscope::ui
