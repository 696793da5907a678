#pragma once
// Dispatch: a grid over two fields of the sweep (heads x seq by default, or any two swept fields)
// coloured by the SDPA kernel PyTorch would pick for the chosen torch version and GPU, with the
// predicted peak in each cell and, on hover, why the kernels before it were refused. A prediction
// from core/torch_dispatch; nothing runs. It predicts for what the user touched last: the sweep
// being set up (setPlannedSweep) or the sweep just shown. A shown sweep with torch runs sets the
// torch release and device those runs had, and each cell also says what torch really ran there
// ("ran math", marked where it differs from the prediction).

#include <map>
#include <optional>
#include <string>
#include <vector>

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

  // The sweep the user is setting up (the Sweep dock); predicted for until a sweep is shown.
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
  struct Ran {
    std::string kernel;
    int64_t run_id = 0;
  };
  // What torch ran per cell summary (summary(spec)), from the shown sweeps' torch.*.auto runs on
  // the target's device.
  std::map<std::string, Ran> ranAt(const torch_dispatch::TorchTarget& t) const;
  std::map<std::string, Ran> ran_;
  std::vector<int64_t> torch_defaults_for_;  // the shown sweeps whose torch release and device are set
 public:
  // What torch ran in the cell (empty when no shown run matches it).
  QString ranIn(size_t x, size_t y) const;
};

}  // namespace attnscope::ui
