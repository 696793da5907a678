#pragma once
// Dispatch: a grid over two fields of the sweep (heads x seq by default, or any two swept fields)
// coloured by the SDPA kernel PyTorch would pick for the chosen torch version and GPU, with the
// predicted peak in each cell and, on hover, why the kernels before it were refused. A prediction
// from core/torch_dispatch; nothing runs. It follows the sweep being set up (setPlannedSweep),
// or the first shown sweep until one is set up.

#include <optional>

#include "core/spec/sweep_spec.h"
#include "core/torch_dispatch/dispatch_grid.h"
#include "ui/chart_view.h"
#include "ui/planned_source.h"

class QComboBox;
class QCPColorMap;
class QLabel;

namespace attnscope::ui {

class DispatchView : public ChartView {
  Q_OBJECT
 public:
  explicit DispatchView(QWidget* parent = nullptr);
  QString title() const override { return tr("Dispatch"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_}; }

  // The sweep the user is setting up (the Sweep dock); takes precedence over shown sweeps.
  void setPlannedSweep(const SweepSpec& sweep);

  // For tests and the screenshot tool.
  QComboBox* torchBox() const { return torch_; }
  QComboBox* gpuBox() const { return gpu_; }
  QComboBox* xBox() const { return x_; }
  QComboBox* yBox() const { return y_; }
  const torch_dispatch::DispatchGrid& grid() const { return grid_; }
  QString cellText(double x, double y) const;
  // The target the boxes describe; nullopt (and the reason in the status line) if the GPU text is unknown.
  std::optional<torch_dispatch::TorchTarget> target() const;

 private:
  void sourceChanged();
  void rebuild();

  QComboBox *torch_ = nullptr, *gpu_ = nullptr, *x_ = nullptr, *y_ = nullptr;
  QLabel* status_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  QCPColorMap* map_ = nullptr;
  PlannedSource source_;
  torch_dispatch::DispatchGrid grid_;
};

}  // namespace attnscope::ui
