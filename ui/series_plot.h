#pragma once
// Draws PlotSeries into a QCustomPlot: measured values as lines with filled markers (pattern and
// marker as the series says: pass, checkpoint or the sweep), predicted dashed with open rings,
// failed points (oom, unsupported, skipped, error, cancelled) as distinct open markers at the
// predicted value. Where pattern or marker encode pass or checkpoint, the legend names each colour
// once and addKey() names the patterns and markers. Remembers which series point each graph point
// is, for tooltips, clicks and tests.

#include <map>
#include <set>
#include <string>

#include <QHash>
#include <QString>
#include <vector>

#include "ui/series_builder.h"

class QCustomPlot;
class QCPGraph;

namespace attnscope::ui {

enum class Metric { memory, latency, throughput };

// The line patterns and markers PlotSeries::line and ::marker index (modulo their count): forward
// solid, train dash-dot; checkpoint none a disc, attention a square.
int seriesLineStyle(int index);  // a Qt::PenStyle
int seriesMarker(int index);     // a QCPScatterStyle::ScatterShape

class SeriesPlot {
 public:
  // Removes every graph of plot and the remembered points.
  void clear(QCustomPlot* plot);
  // Adds the graphs of one series. Graphs carry properties "backend", "kind" (measured,
  // predicted, or the failed status) and "runIds" (store ids parallel to the graph data).
  void add(QCustomPlot* plot, const PlotSeries& series, Metric metric, bool with_predicted);
  // After the series: the key of line patterns and markers (when they encode pass or checkpoint),
  // then measured / predicted / failed markers (addStyleKey).
  void addKey(QCustomPlot* plot, bool with_predicted, bool measured = true);
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
  std::map<int, std::string> line_keys_, marker_keys_;  // index -> "pass=train", since clear()
  std::set<std::string> colours_;                       // colour entries in the legend
  double unit_ = 1;
};

}  // namespace attnscope::ui
