#pragma once
// What the prediction views (Dispatch, Frontier) predict for: the sweep being set up (the Sweep
// dock), else the first shown sweep, else an example until either exists.

#include <optional>

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
    if (planned_ || sweeps.empty()) return false;
    spec_ = sweeps.front()->spec;
    name_ = tr("sweep %1").arg(QString::fromStdString(sweeps.front()->info.name));
    return true;
  }
  // The window calls this on every edit of the spec or the lists; most leave it as it is.
  bool setPlanned(const SweepSpec& sweep) {
    if (planned_ && toJson(*planned_) == toJson(sweep)) return false;
    planned_ = sweep;
    spec_ = sweep;
    name_ = tr("the sweep being set up");
    return true;
  }
  const SweepSpec& spec() const { return spec_; }
  const QString& name() const { return name_; }

 private:
  std::optional<SweepSpec> planned_;
  SweepSpec spec_;
  QString name_;
};

}  // namespace attnscope::ui
