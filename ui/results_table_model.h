#pragma once
// The runs of the shown sweeps as a read-only table (the Results tab and the report's table).

#include <QAbstractTableModel>

#include "ui/chart_math.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

class ResultsTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // Run: "R<id>" as the CLI, the Runs dock and the tooltips name it; Ran: the kernel torch ran
  // (its fact torch.ran), empty for AttnScope's own backends.
  enum Column { RunColumn, SweepColumn, BackendColumn, RanColumn, SpecColumn, StatusColumn, PredictedColumn,
                MeasuredColumn, MedianColumn, ThroughputColumn, ErrorColumn, MessageColumn, ColumnCount };
  enum Role { RunIdRole = Qt::UserRole + 1 };

  explicit ResultsTableModel(QObject* parent = nullptr);
  void setSweeps(const SweepSnapshots& sweeps);
  const RunResult* run(int row) const;
  int rowOf(qint64 run_id) const;  // -1 when not shown

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  struct Row {
    const SweepSnapshot* sweep;
    const RunResult* run;
  };
  SweepSnapshots sweeps_;
  FlopsUnit flops_unit_;
  std::vector<Row> rows_;
};

}  // namespace attnscope::ui
