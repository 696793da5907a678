#pragma once
// Differences per point between two or more sweeps: one row per (backend, spec) found in any
// of them; per sweep the peak memory, median time and status; for every sweep after the first
// the change in memory and time relative to the first.

#include <string>
#include <vector>

#include <QAbstractTableModel>

#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Role { RawRole = Qt::UserRole + 1 };
  explicit CompareModel(QObject* parent = nullptr);
  void setSweeps(const SweepSnapshots& sweeps);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  struct Row {
    std::string key;
    std::vector<const RunResult*> runs;  // per sweep, nullptr when absent
  };
  SweepSnapshots sweeps_;
  std::vector<Row> rows_;
};

}  // namespace attnscope::ui
