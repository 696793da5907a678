#pragma once
// For one run: the plan's named buffers live at the predicted peak step as a stacked bar,
// beside the measured peak; every buffer of the plan listed with its bytes and lifetime.

#include "ui/chart_view.h"

class QComboBox;
class QLabel;

namespace attnscope::ui {

class BreakdownView : public ChartView {
  Q_OBJECT
 public:
  explicit BreakdownView(QWidget* parent = nullptr);
  QString title() const override { return tr("Breakdown"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_}; }
  void selectRun(qint64 run_id) override;
  QComboBox* runBox() const { return run_; }

 private:
  void rebuild();
  const RunResult* current() const;
  QComboBox* run_;
  QCustomPlot* plot_;
  QLabel* buffers_;
};

}  // namespace attnscope::ui
