#pragma once
// The Compare tab: with two or more sweeps shown, the differences per point and the
// environments side by side (the Memory, Time and Heatmap tabs overlay the same sweeps).

#include "ui/chart_view.h"

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
  QList<QCustomPlot*> plots() const override { return {}; }
  CompareModel* model() const { return model_; }
  QStandardItemModel* environmentModel() const { return env_model_; }

 private:
  QLabel* hint_;
  CompareModel* model_;
  QStandardItemModel* env_model_;
  QTableView *table_, *env_table_;
};

}  // namespace attnscope::ui
