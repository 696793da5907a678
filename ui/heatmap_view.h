#pragma once
// Heads x seq maps of peak memory, one per backend and per value of every other field that varies
// (pass, checkpoint, dtype, ...: no cell ever hides a run), and per sweep when several are
// compared; each titled with what it shows ("cpu.flash · pass=train checkpoint=attention") and
// showing its values in the cells. Failed points show their
// status and predicted peak. A shared colour scale (the default) makes maps comparable.

#include <vector>

#include <QPoint>

#include "ui/chart_view.h"

class QCheckBox;
class QGridLayout;
class QCPColorMap;
class QCPColorScale;

namespace attnscope::ui {

class HeatmapView : public ChartView {
  Q_OBJECT
 public:
  explicit HeatmapView(QWidget* parent = nullptr);
  QString title() const override { return tr("Heatmap"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override;
  int exportColumns() const override;
  void setSharedScale(bool shared);
  // The map of backend (in sweep index `sweep`, of the runs whose other varying fields read
  // `variant`, see mapVariants; empty: the first of the backend's), null when not shown.
  QCPColorMap* colorMap(const std::string& backend, size_t sweep = 0, const std::string& variant = {}) const;
  QCustomPlot* mapPlot(const std::string& backend, size_t sweep = 0, const std::string& variant = {}) const;

 private:
  struct Map {
    size_t sweep = 0;
    std::string backend;
    std::string variant;  // mapVariants' label of its runs
    QCustomPlot* plot = nullptr;
    QCPColorMap* map = nullptr;
    QCPColorScale* scale = nullptr;
    std::vector<int64_t> heads, seqs;
    std::vector<const RunResult*> cells;  // heads-major, nullptr when empty
    double lo = 0, hi = 0;                // measured peaks of the ok cells
  };
  void rebuild();
  void fill(Map& m);
  Map makeMap(size_t sweep, const std::string& backend, const std::string& variant);
  const Map* findMap(const std::string& backend, size_t sweep, const std::string& variant) const;
  QString cellText(const Map& m, double x, double y) const;
 public:
  // The run in the cell under pos (pixels of plot), null when none.
  const RunResult* cellRun(const QCustomPlot* plot, QPointF pos) const;

 private:
  QPoint press_;

  QCheckBox* shared_;
  QWidget* grid_host_;
  QGridLayout* grid_;
  std::vector<Map> maps_;
  std::vector<std::vector<std::string>> variants_;  // per sweep, parallel to its runs
};

}  // namespace attnscope::ui
