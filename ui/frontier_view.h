#pragma once
// Frontier: how far the workload goes in a memory budget. For each head count, the longest seq (or
// largest batch) whose predicted peak fits, one line per kernel: our backends' plans, torch's pick
// and each kernel torch could be forced to, under the explainer's rules for the chosen release and
// GPU (core/engine/frontier.h, as `attnscope frontier`). The budget (a size, or a GPU's memory less
// its reserve), the release and the GPU sit above the chart; hover names the buffer that decides
// the frontier. Computed on a pool thread (a few hundred thousand predictions at most); nothing
// runs. It follows the sweep being set up, or the first shown sweep until one is set up.

#include <optional>
#include <vector>

#include "core/engine/frontier.h"
#include "core/spec/sweep_spec.h"
#include "ui/chart_view.h"
#include "ui/job_tracker.h"
#include "ui/planned_source.h"

class QComboBox;
class QLabel;

namespace attnscope::ui {

class FrontierView : public ChartView {
  Q_OBJECT
 public:
  explicit FrontierView(QWidget* parent = nullptr);
  QString title() const override { return tr("Frontier"); }
  void setSweeps(const SweepSnapshots& sweeps) override;
  QList<QCustomPlot*> plots() const override { return {plot_}; }
  void finishPending() override;

  void setPlannedSweep(const SweepSpec& sweep);

  // For tests and the screenshot tool.
  QComboBox* budgetBox() const { return budget_; }
  QComboBox* torchBox() const { return torch_; }
  QComboBox* gpuBox() const { return gpu_; }
  QComboBox* varyBox() const { return vary_; }
  QLabel* statusLabel() const { return status_; }
  bool isComputing() const { return computing_; }
  const std::vector<FrontierRow>& rows() const { return rows_; }
  const FrontierQuery& query() const { return query_; }
  // The hover text of row `row`'s point for the other axis's value `other`; empty for none.
  QString pointText(size_t row, int64_t other) const;

 Q_SIGNALS:
  void computed();  // rows() are those of the current controls

 private:
  struct Setup {
    FrontierQuery query;
    std::vector<FrontierLine> lines;
    QString budget_text, problem;
  };
  Setup setup() const;
  void rebuild();
  void showRows(const Setup& s, std::vector<FrontierRow> rows);

  QComboBox *budget_ = nullptr, *torch_ = nullptr, *gpu_ = nullptr, *vary_ = nullptr, *pass_ = nullptr;
  QLabel* status_ = nullptr;
  QCustomPlot* plot_ = nullptr;
  PlannedSource source_;
  FrontierQuery query_;
  std::vector<FrontierRow> rows_;
  JobTracker jobs_;
  bool computing_ = false;
};

}  // namespace attnscope::ui
