#pragma once
// The Compare tab: with two or more sweeps shown, the ratios B/A per point and per backend as a
// chart, the points side by side in a table whose Point column stays put while the others
// scroll, and the environments side by side (Memory, Time and Heatmap overlay the same sweeps).

#include "ui/chart_view.h"

class QComboBox;
class QLabel;
class QStandardItemModel;
class QTableView;

namespace attnscope::ui {

class CompareModel;

class CompareView : public ChartView {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  QString title() const override { return tr("Compare"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override;
  QCustomPlot* ratioPlot() const { return ratio_plot_; }
  QTableView* pointTable() const { return point_table_; }
  CompareModel* model() const { return model_; }
  QStandardItemModel* environmentModel() const { return env_model_; }
  // The baseline A every ratio is against (the first shown sweep until one is chosen).
  QComboBox* baselineBox() const { return baseline_; }

 private:
  QLabel* hint_;
  QComboBox* baseline_;
  SweepSnapshots shown_;  // as shown; sweeps_ has the baseline first
  CompareModel* model_;
  QStandardItemModel* env_model_;
  void rebuildRatioPlot();
  QTableView *table_, *point_table_, *env_table_;
  QCustomPlot* ratio_plot_;
};

}  // namespace attnscope::ui
