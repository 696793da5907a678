#pragma once
// The Sweep dock: value lists for heads, seq and any other spec field, repetitions, an optional
// memory budget, the accuracy check's mode, and, before anything runs, the number of points and the predicted peak of the
// largest point (max of plan().peakBytes() over points x selected backends).

#include <string>
#include <vector>

#include <QWidget>

#include "core/backend/backend.h"
#include "core/spec/sweep_spec.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace attnscope::ui {

class SweepPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SweepPanel(QWidget* parent = nullptr);

  // Recomputes the sweep from the base spec and the selected backends, and shows the summary.
  // workload_invalid: the Workload form has a field in error (its spec is the last valid one):
  // no point is counted and the summary says to fix the form.
  void update(const WorkloadSpec& base, const std::vector<Backend*>& backends, bool workload_invalid = false);
  const SweepSpec& sweep() const { return sweep_; }
  bool valid() const { return problem_.isEmpty(); }
  QString problem() const { return problem_; }
  int64_t predictedLargestPeak() const { return largest_peak_; }
  // The spec fields the lists sweep (canonical names: "heads", "seq", "dtype", ...); the
  // Workload form shows them as swept instead of as values that would be ignored.
  std::vector<std::string> sweptFields() const;

  // Restores the lists from a sweep (settings, examples).
  void setSweep(const SweepSpec& sweep);
  void setAxisText(const QString& field, const QString& values);  // "heads", "seq" or "other"

 Q_SIGNALS:
  void changed();

 private:
  QLineEdit *name_, *heads_, *seq_, *other_;
  QSpinBox *warmup_, *reps_;
  QDoubleSpinBox* budget_mib_;
  QComboBox* check_;
  QLabel *summary_, *message_;
  SweepSpec sweep_;
  QString problem_;
  int64_t largest_peak_ = -1;
};

}  // namespace attnscope::ui
