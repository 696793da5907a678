#pragma once
// Draws PlotSeries into a QCustomPlot: measured values solid with discs, predicted dashed,
// failed points (oom, unsupported, skipped, error, cancelled) as distinct markers at the
// predicted value. Remembers which series point each graph point is, for tooltips and tests.

#include <set>

#include <QHash>
#include <QString>
#include <vector>

#include "ui/series_builder.h"

class QCustomPlot;
class QCPGraph;

namespace attnscope::ui {

enum class Metric { memory, latency, throughput };

class SeriesPlot {
 public:
  // Removes every graph of plot and the remembered points.
  void clear(QCustomPlot* plot);
  // Adds the graphs of one series. Graphs carry properties "backend", "kind" (measured,
  // predicted, or the failed status) and "runIds" (store ids parallel to the graph data).
  void add(QCustomPlot* plot, const PlotSeries& series, Metric metric, bool with_predicted);
  const SeriesPoint* point(QCPGraph* graph, int index) const;
  // Latency (seconds) and throughput (flop/s) are divided by this: 1e-3 for ms, 1e12 for TFLOP/s.
  void setUnit(double per_unit) { unit_ = per_unit; }
  // The failed statuses drawn since clear(), for the legend's key.
  const std::set<RunStatus>& failedStatuses() const { return failed_; }
  QString tooltip(QCPGraph* graph, int index) const;

 private:
  QHash<QCPGraph*, std::vector<const SeriesPoint*>> points_;
  QHash<QCPGraph*, QString> labels_;
  std::set<RunStatus> failed_;
  double unit_ = 1;
};

}  // namespace attnscope::ui
