#pragma once
// The signature view: peak memory vs number of heads and vs sequence length, side by side, one
// series per backend (and per value of the other varying fields), measured solid, predicted
// dashed, failed points marked; linear or log axes.

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
  QList<QCustomPlot*> plots() const override { return {heads_plot_, seq_plot_}; }
  QCustomPlot* headsPlot() const { return heads_plot_; }
  QCustomPlot* seqPlot() const { return seq_plot_; }
  void setLogScale(bool log);
  bool logScale() const;

 private:
  void rebuild();
  void setupAxes(QCustomPlot* plot, const QString& title, const QString& x_label);
  void fillPlot(QCustomPlot* plot, SeriesPlot& sp, std::vector<PlotSeries>& series, XField x);

  QCustomPlot* heads_plot_;
  QCustomPlot* seq_plot_;
  QCheckBox* log_box_;
  QCheckBox* predicted_box_;
  SeriesPlot heads_series_plot_, seq_series_plot_;
  std::vector<PlotSeries> heads_series_, seq_series_;
};

}  // namespace attnscope::ui
