#include "ui/compare_model.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include <QColor>

#include "core/format.h"
#include "ui/series_builder.h"

namespace attnscope::ui {

namespace {
constexpr int kPerSweep = 3;  // peak, time, status
constexpr int kPerDelta = 2;  // delta peak, delta time
}  // namespace

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::setSweeps(const SweepSnapshots& sweeps) {
  beginResetModel();
  sweeps_ = sweeps;
  rows_.clear();
  // Points match on the backend and the swept fields, so sweeps that differ in a fixed field
  // (another mask, dtype or width) line up point by point.
  std::set<std::string> fields;
  for (const auto& s : sweeps_)
    for (const auto& a : s->spec.axes) fields.insert(a.field == "seq_q" ? "seq" : a.field);
  auto keyOf = [&](const RunResult& r) {
    if (fields.empty()) return r.backend + "  " + summary(r.spec);
    const nlohmann::json j = toJson(r.spec);
    std::string key = r.backend;
    for (const auto& f : fields)
      if (j.contains(f)) key += "  " + f + "=" + (j[f].is_string() ? j[f].get<std::string>() : j[f].dump());
    return key;
  };
  std::map<std::string, size_t> index;
  for (size_t s = 0; s < sweeps_.size(); ++s)
    for (const RunResult& r : sweeps_[s]->runs) {
      const std::string key = keyOf(r);
      auto [it, fresh] = index.try_emplace(key, rows_.size());
      if (fresh) rows_.push_back({key, std::vector<const RunResult*>(sweeps_.size(), nullptr)});
      rows_[it->second].runs[s] = &r;
    }
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(rows_.size()); }

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
  return (c % kPerDelta == 0 ? tr("\u0394 peak %1") : tr("\u0394 time %1")).arg(name);
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& row = rows_[static_cast<size_t>(index.row())];
  if (index.column() == 0) return role == Qt::DisplayRole || role == RawRole ? QVariant(QString::fromStdString(row.key)) : QVariant();
  const int n = static_cast<int>(sweeps_.size());
  int c = index.column() - 1;
  auto peak = [](const RunResult* r) { return r ? shownPeak(*r) : -1; };
  auto time = [](const RunResult* r) { return r && r->status == RunStatus::ok ? r->timing.median_s : -1.0; };
  if (c < n * kPerSweep) {
    const RunResult* r = row.runs[static_cast<size_t>(c / kPerSweep)];
    if (role == Qt::ForegroundRole && c % kPerSweep == 2 && r && r->status != RunStatus::ok) return QColor(0xd0, 0x3a, 0x3a);
    if (role != Qt::DisplayRole && role != RawRole) return {};
    if (!r) return role == RawRole ? QVariant() : QVariant(QStringLiteral("-"));
    switch (c % kPerSweep) {
      case 0: return role == RawRole ? QVariant::fromValue<qlonglong>(peak(r)) : QVariant(QString::fromStdString(formatBytes(peak(r))));
      case 1:
        if (role == RawRole) return time(r);
        return time(r) < 0 ? QStringLiteral("-") : QString::fromStdString(formatDuration(time(r)));
      default: return QString::fromUtf8(toString(r->status).data(), toString(r->status).size());
    }
  }
  c -= n * kPerSweep;
  const RunResult* first = row.runs[0];
  const RunResult* other = row.runs[static_cast<size_t>(1 + c / kPerDelta)];
  double a = -1, b = -1;
  if (c % kPerDelta == 0) {
    a = static_cast<double>(peak(first));
    b = static_cast<double>(peak(other));
  } else {
    a = time(first);
    b = time(other);
  }
  const bool valid = a > 0 && b >= 0;
  const double pct = valid ? (b - a) / a * 100.0 : 0;
  if (role == RawRole) return valid ? QVariant(pct) : QVariant();
  if (role == Qt::ForegroundRole && valid && std::abs(pct) >= 10)
    return pct > 0 ? QColor(0xd0, 0x3a, 0x3a) : QColor(0x2e, 0xa0, 0x43);
  if (role != Qt::DisplayRole) return {};
  return valid ? QStringLiteral("%1%2%").arg(pct >= 0 ? "+" : "").arg(pct, 0, 'f', 1) : QStringLiteral("-");
}

}  // namespace attnscope::ui
