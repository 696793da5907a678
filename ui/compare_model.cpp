#include "ui/compare_model.h"
#include "ui/chart_math.h"

#include <cmath>
#include <cstdlib>

#include <QColor>

#include "core/base/format.h"
#include "ui/series_builder.h"

namespace attnscope::ui {

namespace {
constexpr int kPerSweep = 3;  // peak, time, status
constexpr int kPerDelta = 3;  // peak B/A, peak B - A, time B/A
}  // namespace

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::setSweeps(const SweepSnapshots& sweeps) {
  beginResetModel();
  sweeps_ = sweeps;
  std::vector<const std::vector<RunResult>*> runs;
  for (const auto& s : sweeps_) runs.push_back(&s->runs);
  comparison_ = compareSweeps(runs);
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(comparison_.points.size()); }

int CompareModel::columnCount(const QModelIndex& parent) const {
  if (parent.isValid() || sweeps_.empty()) return parent.isValid() ? 0 : 1;
  const int n = static_cast<int>(sweeps_.size());
  return 1 + n * kPerSweep + (n - 1) * kPerDelta;
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= columnCount()) return {};
  if (section == 0) return tr("Point");
  const int n = static_cast<int>(sweeps_.size());
  int c = section - 1;
  if (c < n * kPerSweep) {
    const QString name = QString::fromStdString(sweeps_[static_cast<size_t>(c / kPerSweep)]->info.name);
    static const char* what[] = {"peak", "median", "status"};
    return name + " " + tr(what[c % kPerSweep]);
  }
  c -= n * kPerSweep;
  const QString name = QString::fromStdString(sweeps_[static_cast<size_t>(1 + c / kPerDelta)]->info.name);
  const QString first = QString::fromStdString(sweeps_[0]->info.name);
  const int d = c % kPerDelta;
  return (d == 0 ? tr("peak %1 / %2") : d == 1 ? tr("peak %1 \u2212 %2") : tr("time %1 / %2")).arg(name, first);
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const ComparedPoint& row = comparison_.points[static_cast<size_t>(index.row())];
  if (index.column() == 0) {
    if (role == RawRole) return index.row();  // compareSweeps' order: per backend, numeric
    return role == Qt::DisplayRole ? QVariant(QString::fromStdString(row.label)) : QVariant();
  }
  const int n = static_cast<int>(sweeps_.size());
  int c = index.column() - 1;
  auto peak = [](const RunResult* r) { return r ? shownPeak(*r) : -1; };
  auto time = [](const RunResult* r) { return r && r->status == RunStatus::ok ? r->timing.median_s : -1.0; };
  if (c < n * kPerSweep) {
    const RunResult* r = row.runs[static_cast<size_t>(c / kPerSweep)];
    if (role == Qt::ForegroundRole && c % kPerSweep == 2 && r && r->status != RunStatus::ok) return QColor(0xd0, 0x3a, 0x3a);
    if (role == Qt::ToolTipRole && c % kPerSweep == 2 && r && !r->message.empty()) return QString::fromStdString(r->message);
    if (role != Qt::DisplayRole && role != RawRole) return {};
    if (!r) return role == RawRole ? QVariant() : QVariant(QStringLiteral("-"));
    switch (c % kPerSweep) {
      case 0: return role == RawRole ? QVariant::fromValue<qlonglong>(peak(r)) : QVariant(QString::fromStdString(formatBytes(peak(r))));
      case 1:
        if (role == RawRole) return time(r);
        return time(r) < 0 ? QStringLiteral("-") : QString::fromStdString(durationText(time(r)));
      default: {
        // A torch run says which kernel torch picked, as `attnscope show` and the Results do.
        const QString status = QString::fromStdString(statusText(*r));
        const std::string ran = torchRan(*r);
        return ran.empty() ? status : tr("%1, torch ran: %2").arg(status, QString::fromStdString(ran));
      }
    }
  }
  c -= n * kPerSweep;
  const size_t other = static_cast<size_t>(1 + c / kPerDelta);
  if (c % kPerDelta == 1) {
    // The absolute difference of the peaks, signed: what B needs more (or less) than A.
    const RunResult *a = row.runs[0], *b = row.runs[other];
    const bool both = a && b && peak(a) >= 0 && peak(b) >= 0;
    const int64_t diff = both ? peak(b) - peak(a) : 0;
    if (role == RawRole) return both ? QVariant::fromValue<qlonglong>(diff) : QVariant();
    if (role == Qt::ForegroundRole && both && a && std::llabs(diff) * 10 >= peak(a) && diff != 0)
      return diff > 0 ? QColor(0xd0, 0x3a, 0x3a) : QColor(0x2e, 0xa0, 0x43);
    if (role != Qt::DisplayRole) return {};
    if (!both) return QStringLiteral("-");
    return (diff > 0 ? QStringLiteral("+") : diff < 0 ? QStringLiteral("\u2212") : QString()) +
           QString::fromStdString(formatBytes(std::llabs(diff)));
  }
  const std::optional<double> ratio = c % kPerDelta == 0 ? peakRatio(row, 0, other) : timeRatio(row, 0, other);
  if (role == RawRole) return ratio ? QVariant(*ratio) : QVariant();
  if (role == Qt::ForegroundRole && ratio && std::abs(*ratio - 1) >= 0.1)
    return *ratio > 1 ? QColor(0xd0, 0x3a, 0x3a) : QColor(0x2e, 0xa0, 0x43);
  if (role == Qt::ToolTipRole && ratio)
    return tr("%1 / %2").arg(QString::fromStdString(sweeps_[other]->info.name), QString::fromStdString(sweeps_[0]->info.name));
  if (role != Qt::DisplayRole) return {};
  return ratio ? QStringLiteral("%1\u00d7").arg(*ratio, 0, 'f', *ratio >= 10 ? 1 : 2) : QStringLiteral("-");
}

}  // namespace attnscope::ui
