#pragma once
// Heads x seq colour map of peak memory, one map per backend (picked in a combo box); cells
// of failed points stay empty. Overlays of several sweeps list one entry per sweep and backend.

#include <vector>

#include "ui/chart_view.h"

class QComboBox;
class QCPColorMap;
class QCPColorScale;

namespace attnscope::ui {

class HeatmapView : public ChartView {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  QString title() const override { return tr("Heatmap"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_}; }
  QComboBox* backendBox() const { return backend_; }
  QCPColorMap* colorMap() const { return map_; }

 private:
  void rebuild();
  QString cellText(double x, double y) const;

  QComboBox* backend_;
  QCustomPlot* plot_;
  QCPColorMap* map_;
  QCPColorScale* scale_;
  std::vector<int64_t> heads_, seqs_;
  std::vector<const RunResult*> cells_;  // heads-major, nullptr when empty
};

}  // namespace attnscope::ui
