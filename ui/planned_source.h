#pragma once
// What the prediction views (Dispatch, Frontier) predict for: what the user touched last, the
// sweep being set up (an edit in the Sweep dock or the workload) or the first of the sweeps just
// shown (picked in the Runs dock), else an example until either exists.

#include <optional>
#include <vector>

#include <QCoreApplication>
#include <QString>

#include "core/spec/sweep_spec.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

class PlannedSource {
  Q_DECLARE_TR_FUNCTIONS(PlannedSource)
 public:
  PlannedSource(SweepSpec example, QString example_name) : spec_(std::move(example)), name_(std::move(example_name)) {}
  // Each returns whether the source changed (and the view should predict again).
  bool setShown(const SweepSnapshots& sweeps) {
    std::vector<int64_t> ids;
    for (const auto& sw : sweeps) ids.push_back(sw->info.id);
    // The same sweeps again (a point finished, a refresh): the source stays what it was.
    if (sweeps.empty() || ids == shown_ids_) return false;
    shown_ids_ = std::move(ids);
    spec_ = sweeps.front()->spec;
    name_ = tr("S%1 %2").arg(sweeps.front()->info.id).arg(QString::fromStdString(sweeps.front()->info.name));
    shown_ = true;
    return true;
  }
  // The window calls this on every edit of the spec or the lists; most leave it as it is.
  bool setPlanned(const SweepSpec& sweep) {
    if (planned_ && toJson(*planned_) == toJson(sweep)) return false;
    planned_ = sweep;
    spec_ = sweep;
    name_ = tr("the sweep being set up");
    shown_ = false;
    return true;
  }
  // True while the source is a shown sweep.
  bool isShown() const { return shown_; }
  const SweepSpec& spec() const { return spec_; }
  const QString& name() const { return name_; }

 private:
  std::optional<SweepSpec> planned_;
  std::vector<int64_t> shown_ids_;
  bool shown_ = false;
  SweepSpec spec_;
  QString name_;
};

}  // namespace attnscope::ui
