#pragma once
// Differences per point between two or more sweeps, paired by core's compareSweeps (the rule
// `attnscope compare` uses): one row per point found in any of them; per sweep the peak memory,
// median time and status; for every sweep after the first the ratios B/A of peak and time.
// The Point column sorts in point order (numeric, per backend), not as text.

#include <string>
#include <vector>

#include <QAbstractTableModel>

#include "core/export/sweep_compare.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Role { RawRole = Qt::UserRole + 1 };
  explicit CompareModel(QObject* parent = nullptr);
  void setSweeps(const SweepSnapshots& sweeps);
  const SweepComparison& comparison() const { return comparison_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  SweepSnapshots sweeps_;
  SweepComparison comparison_;
};

}  // namespace attnscope::ui
