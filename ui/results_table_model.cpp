#include "ui/results_table_model.h"
#include "ui/chart_math.h"

#include <QColor>

#include <algorithm>

#include "core/base/format.h"

namespace attnscope::ui {

ResultsTableModel::ResultsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ResultsTableModel::setSweeps(const SweepSnapshots& sweeps) {
  beginResetModel();
  sweeps_ = sweeps;
  rows_.clear();
  for (const auto& s : sweeps_)
    if (s)
      for (const RunResult& r : s->runs) rows_.push_back({s.get(), &r});
  // One unit for the whole column, so rows compare at a glance (no GFLOP/s next to MFLOP/s).
  double max_flops = 0;
  for (const Row& row : rows_)
    if (row.run->status == RunStatus::ok) max_flops = std::max(max_flops, row.run->flopsPerSecond());
  flops_unit_ = flopsUnitFor(max_flops);
  endResetModel();
}

const RunResult* ResultsTableModel::run(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[static_cast<size_t>(row)].run : nullptr;
}

int ResultsTableModel::rowOf(qint64 run_id) const {
  for (size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].run->id == run_id) return static_cast<int>(i);
  return -1;
}

int ResultsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int ResultsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ResultsTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[static_cast<size_t>(index.row())];
  const RunResult& r = *row.run;
  const bool ok = r.status == RunStatus::ok;
  if (role == RunIdRole) return QVariant::fromValue<qlonglong>(r.id);
  if (role == Qt::ForegroundRole && index.column() == StatusColumn && !ok) return QColor(0xd0, 0x3a, 0x3a);
  if (role == Qt::TextAlignmentRole && index.column() >= PredictedColumn && index.column() <= ErrorColumn)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  // EditRole gives raw numbers for sorting; DisplayRole formatted text.
  const bool raw = role == Qt::EditRole;
  if (role != Qt::DisplayRole && !raw && role != Qt::ToolTipRole) return {};
  auto bytes = [raw](int64_t b) -> QVariant {
    if (raw) return QVariant::fromValue<qlonglong>(b);
    return b < 0 ? QStringLiteral("-") : QString::fromStdString(formatBytes(b));
  };
  switch (index.column()) {
    case RunColumn:
      if (raw) return QVariant::fromValue<qlonglong>(r.id);
      return QStringLiteral("R%1").arg(r.id);
    case SweepColumn: return QStringLiteral("S%1 %2").arg(row.sweep->info.id).arg(QString::fromStdString(row.sweep->info.name));
    case BackendColumn: return QString::fromStdString(r.backend);
    case RanColumn: {
      auto ran = r.facts.find("torch.ran");
      return ran == r.facts.end() ? QString() : QString::fromStdString(ran->second);
    }
    case SpecColumn: return QString::fromStdString(summary(r.spec));
    case StatusColumn:
      if (role == Qt::ToolTipRole) return QString::fromStdString("accuracy: " + accuracySummary(r.accuracy));
      return QString::fromStdString(statusText(r));
    case PredictedColumn: return bytes(r.memory.predicted_peak);
    case MeasuredColumn: return bytes(ok ? r.memory.measured_peak : -1);
    case MedianColumn:
      if (raw) return ok ? r.timing.median_s : 0.0;
      return ok ? QString::fromStdString(durationText(r.timing.median_s)) : QStringLiteral("-");
    case ThroughputColumn:
      if (raw) return r.flopsPerSecond();
      return ok ? QString::fromStdString(formatFlopsIn(r.flopsPerSecond(), flops_unit_)) : QStringLiteral("-");
    case ErrorColumn:
      if (raw) return r.accuracy.max_abs_error;
      return r.accuracy.checked ? QString::fromStdString(errorText(r.accuracy.max_abs_error)) : QStringLiteral("-");
    case MessageColumn: return QString::fromStdString(r.message);
  }
  return {};
}

QVariant ResultsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
  static const char* names[] = {"Run", "Sweep", "Backend", "torch ran", "Spec", "Status", "Predicted peak",
                                "Measured peak", "Median", "Throughput", "Max abs error", "Message"};
  return tr(names[section]);
}

}  // namespace attnscope::ui
