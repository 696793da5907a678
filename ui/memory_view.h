#pragma once
// The signature view: peak memory vs number of heads and vs sequence length, side by side, one
// series per backend (and per value of the other varying fields), measured solid, predicted
// dashed, failed points marked; linear or log axes. Where the runs shown differ in the depth of a
// stack (layers) or in tensor-parallel ranks (tp), a chart against each of those joins them, and
// then a heads or seq chart with a single x value (a column of dots) is left out.

#include <array>

#include "ui/chart_view.h"
#include "ui/series_plot.h"

class QCheckBox;

namespace attnscope::ui {

class MemoryView : public ChartView {
  Q_OBJECT
 public:
  explicit MemoryView(QWidget* parent = nullptr);
  QString title() const override { return tr("Memory"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  // The charts shown, left to right (exports and the report draw these).
  QList<QCustomPlot*> plots() const override { return shown_; }
  QCustomPlot* headsPlot() const { return chart(XField::heads).plot; }
  QCustomPlot* seqPlot() const { return chart(XField::seq).plot; }
  QCustomPlot* layersPlot() const { return chart(XField::layers).plot; }
  QCustomPlot* tpPlot() const { return chart(XField::tp).plot; }
  // The series drawn in the chart against x (empty when that chart is not shown).
  const std::vector<PlotSeries>& series(XField x) const { return chart(x).series; }
  void setLogScale(bool log);
  bool logScale() const;

 private:
  struct Chart {
    XField x = XField::heads;
    QCustomPlot* plot = nullptr;
    SeriesPlot painter;
    std::vector<PlotSeries> series;
  };
  const Chart& chart(XField x) const { return charts_[static_cast<size_t>(x)]; }
  void rebuild();
  void setupAxes(QCustomPlot* plot, const QString& title, const QString& x_label);
  void fillPlot(Chart& chart);

  std::array<Chart, 4> charts_;  // indexed by XField
  QList<QCustomPlot*> shown_;
  QCheckBox* log_box_;
  QCheckBox* predicted_box_;
};

}  // namespace attnscope::ui
