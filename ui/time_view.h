#pragma once
// Latency and TFLOP/s against sequence length (or heads; layers and tp where the runs shown differ
// in them), one series per backend and per value of the other varying fields. Only ok points have
// a time.

#include "ui/chart_view.h"
#include "ui/series_plot.h"

class QComboBox;

namespace attnscope::ui {

class TimeView : public ChartView {
  Q_OBJECT
 public:
  explicit TimeView(QWidget* parent = nullptr);
  QString title() const override { return tr("Time"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {latency_, throughput_}; }
  QCustomPlot* latencyPlot() const { return latency_; }
  QComboBox* axisBox() const { return axis_; }

 private:
  void rebuild();
  QComboBox* axis_;
  QCustomPlot *latency_, *throughput_;
  SeriesPlot latency_series_plot_, throughput_series_plot_;
  std::vector<PlotSeries> series_;
};

}  // namespace attnscope::ui
