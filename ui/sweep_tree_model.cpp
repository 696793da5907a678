#include "ui/sweep_tree_model.h"
#include "ui/chart_math.h"

#include <algorithm>
#include <unordered_set>

#include <QColor>
#include <QDateTime>
#include <QRegularExpression>

#include "core/base/format.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

// "2 COMPLETED, 1 PENDING": a submitted sweep's tasks by state.
QString taskSummary(const SweepInfo& i) {
  QStringList parts;
  for (const auto& [state, n] : i.task_states) parts << QStringLiteral("%1 %2").arg(n).arg(QString::fromStdString(state));
  return parts.join(", ");
}

}  // namespace

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

}  // namespace

SweepTreeModel::SweepTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void SweepTreeModel::setStore(Store* store) {
  store_ = store;
  reload();
}

void SweepTreeModel::reload() {
  const ChangeInFlight change(changing_);
  ++local_changes_;
  beginResetModel();
  sweeps_.clear();
  if (store_) {
    try {
      for (SweepInfo& info : store_->sweeps()) sweeps_.push_back({std::move(info), {}, false});
    } catch (const std::exception& e) {
      Q_EMIT storeError(qs(e.what()));
    }
  }
  reindex();
  endResetModel();
}

void SweepTreeModel::reindex() {
  rows_.clear();
  for (size_t i = 0; i < sweeps_.size(); ++i) rows_[sweeps_[i].info.id] = static_cast<int>(i);
}

int SweepTreeModel::sweepRow(int64_t sweep_id) const {
  const auto it = rows_.find(sweep_id);
  return it == rows_.end() ? -1 : it->second;
}

SweepTreeModel::RunRow SweepTreeModel::rowOf(const RunResult& r) {
  RunRow row;
  row.id = r.id;
  row.backend = r.backend;
  row.point = QStringLiteral("H%1 L%2").arg(r.spec.heads).arg(r.spec.seq_q);
  row.spec = summary(r.spec);
  row.status = statusText(r);
  row.message = r.message;
  row.ok = r.status == RunStatus::ok;
  row.every_row = row.ok && r.accuracy.everyRow();
  row.measured_peak = row.ok ? r.memory.measured_peak : -1;
  row.predicted_peak = r.memory.predicted_peak;
  row.median_s = row.ok ? r.timing.median_s : 0.0;
  return row;
}

void SweepTreeModel::refreshSweep(int64_t sweep_id) {
  if (!store_) return;
  ++local_changes_;
  std::optional<SweepInfo> info;
  try {
    info = store_->sweep(sweep_id);
  } catch (const std::exception& e) {
    Q_EMIT storeError(qs(e.what()));
    return;
  }
  if (!info) return;
  const int row = sweepRow(sweep_id);
  if (row >= 0) {
    sweeps_[static_cast<size_t>(row)].info = std::move(*info);
    countsChanged(row);
    return;
  }
  SweepNode node{std::move(*info), readRuns(sweep_id), true};
  const int n = static_cast<int>(sweeps_.size());
  const ChangeInFlight change(changing_);
  beginInsertRows({}, n, n);
  sweeps_.push_back(std::move(node));
  reindex();
  endInsertRows();
  countsChanged(n);
}

void SweepTreeModel::addRun(int64_t sweep_id, const RunResult& run) {
  int row = sweepRow(sweep_id);
  if (row < 0) {
    refreshSweep(sweep_id);
    row = sweepRow(sweep_id);
    if (row < 0) return;
  }
  // A sweep not read yet reads its runs now, this one included (the worker stored it first).
  fetchRow(row);
  SweepNode& s = sweeps_[static_cast<size_t>(row)];
  const bool known = std::any_of(s.runs.begin(), s.runs.end(), [&](const RunRow& r) { return r.id == run.id; });
  if (!known) {
    const int n = static_cast<int>(s.runs.size());
    const ChangeInFlight change(changing_);
    beginInsertRows(index(row, 0), n, n);
    s.runs.push_back(rowOf(run));
    endInsertRows();
  }
  countsChanged(row);
}

std::vector<SweepTreeModel::RunRow> SweepTreeModel::readRuns(int64_t sweep_id, bool* ok) {
  std::vector<RunRow> runs;
  if (ok) *ok = store_ != nullptr;
  if (!store_) return runs;
  try {
    for (const RunResult& r : store_->runs(sweep_id)) runs.push_back(rowOf(r));
  } catch (const std::exception& e) {
    if (ok) *ok = false;
    // Queued: fetchMore often runs inside a view's expand, and a dialog there would re-enter it.
    QMetaObject::invokeMethod(this, [this, m = qs(e.what())] { Q_EMIT storeError(m); }, Qt::QueuedConnection);
  }
  return runs;
}

void SweepTreeModel::updateSweeps(std::vector<SweepInfo> listed) {
  std::unordered_set<int64_t> ids;
  for (const SweepInfo& info : listed) ids.insert(info.id);
  // From the last row up, so the rows above keep their numbers while others go.
  for (int row = static_cast<int>(sweeps_.size()) - 1; row >= 0; --row) {
    if (ids.count(sweeps_[static_cast<size_t>(row)].info.id)) continue;
    const ChangeInFlight change(changing_);
    beginRemoveRows({}, row, row);
    sweeps_.erase(sweeps_.begin() + row);
    reindex();
    endRemoveRows();
  }
  for (SweepInfo& info : listed) {
    const int row = sweepRow(info.id);
    if (row < 0) {
      const int n = static_cast<int>(sweeps_.size());
      const ChangeInFlight change(changing_);
      beginInsertRows({}, n, n);
      sweeps_.push_back({std::move(info), {}, false});
      reindex();
      endInsertRows();
      continue;
    }
    SweepNode& s = sweeps_[static_cast<size_t>(row)];
    const SweepInfo& held = s.info;
    const bool recount = s.read && info.run_count != static_cast<int64_t>(s.runs.size());
    // A read sweep's counts come from its runs (countsChanged), an unread one's from the listing.
    const bool same_counts = s.read ? !recount
                                    : held.run_count == info.run_count && held.ok_count == info.ok_count &&
                                          held.ok_every_row == info.ok_every_row;
    if (same_counts && held.name == info.name && held.state == info.state && held.notes == info.notes &&
        held.tags == info.tags && held.error == info.error && held.task_states == info.task_states)
      continue;  // most rows of most listings: no signal, no repaint
    s.info = std::move(info);
    if (recount) rereadRuns(row);
    countsChanged(row);
  }
}

void SweepTreeModel::rereadRuns(int row) {
  SweepNode& s = sweeps_[static_cast<size_t>(row)];
  bool ok = false;
  std::vector<RunRow> stored = readRuns(s.info.id, &ok);
  if (!ok) return;  // the rows stay as they were; storeError says why
  const QModelIndex parent = index(row, 0);
  std::unordered_set<int64_t> stored_ids;
  for (const RunRow& r : stored) stored_ids.insert(r.id);
  for (int j = static_cast<int>(s.runs.size()) - 1; j >= 0; --j) {
    if (stored_ids.count(s.runs[static_cast<size_t>(j)].id)) continue;
    const ChangeInFlight change(changing_);
    beginRemoveRows(parent, j, j);
    s.runs.erase(s.runs.begin() + j);
    endRemoveRows();
  }
  std::unordered_set<int64_t> held;
  for (const RunRow& r : s.runs) held.insert(r.id);
  std::erase_if(stored, [&](const RunRow& r) { return held.count(r.id) > 0; });
  if (stored.empty()) return;
  const int n = static_cast<int>(s.runs.size());
  const ChangeInFlight change(changing_);
  beginInsertRows(parent, n, n + static_cast<int>(stored.size()) - 1);
  for (RunRow& r : stored) s.runs.push_back(std::move(r));
  endInsertRows();
}

void SweepTreeModel::fetchRow(int row) {
  SweepNode& s = sweeps_[static_cast<size_t>(row)];
  if (s.read) return;
  std::vector<RunRow> runs = readRuns(s.info.id);
  s.read = true;
  if (runs.empty()) return;
  const ChangeInFlight change(changing_);
  beginInsertRows(index(row, 0), 0, static_cast<int>(runs.size()) - 1);
  s.runs = std::move(runs);
  endInsertRows();
}

void SweepTreeModel::fetchAll() {
  for (int row = 0; row < static_cast<int>(sweeps_.size()); ++row) fetchRow(row);
}

bool SweepTreeModel::canFetchMore(const QModelIndex& parent) const {
  if (changing_ || !parent.isValid() || parent.model() != this || parent.internalId() != 0 || parent.column() != 0) return false;
  return parent.row() < static_cast<int>(sweeps_.size()) && !sweeps_[static_cast<size_t>(parent.row())].read;
}

void SweepTreeModel::fetchMore(const QModelIndex& parent) {
  if (canFetchMore(parent)) fetchRow(parent.row());
}

void SweepTreeModel::countsChanged(int row) {
  SweepNode& s = sweeps_[static_cast<size_t>(row)];
  if (s.read) {
    s.info.run_count = static_cast<int64_t>(s.runs.size());
    s.info.ok_count = std::count_if(s.runs.begin(), s.runs.end(), [](const RunRow& r) { return r.ok; });
    s.info.ok_every_row = std::count_if(s.runs.begin(), s.runs.end(), [](const RunRow& r) { return r.every_row; });
  }
  Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

std::vector<int64_t> SweepTreeModel::sweepIdsInState(const std::string& state) const {
  std::vector<int64_t> ids;
  for (const auto& s : sweeps_)
    if (s.info.state == state) ids.push_back(s.info.id);
  return ids;
}

QModelIndex SweepTreeModel::sweepIndex(int64_t sweep_id, int column) const {
  const int row = sweepRow(sweep_id);
  return row < 0 ? QModelIndex() : index(row, column);
}

QModelIndex SweepTreeModel::runIndex(int64_t sweep_id, int64_t run_id, int column) {
  const int row = sweepRow(sweep_id);
  if (row < 0) return {};
  fetchRow(row);
  const auto& runs = sweeps_[static_cast<size_t>(row)].runs;
  for (size_t j = 0; j < runs.size(); ++j)
    if (runs[j].id == run_id) return index(static_cast<int>(j), column, index(row, 0));
  return {};
}

bool SweepTreeModel::deleteSweeps(const std::vector<int64_t>& ids) {
  if (!store_) return false;
  bool ok = true;
  for (int64_t id : ids) {
    ++local_changes_;
    try {
      store_->deleteSweep(id);
    } catch (const std::exception& e) {
      Q_EMIT storeError(qs(e.what()));
      ok = false;
      continue;
    }
    const int row = sweepRow(id);
    if (row < 0) continue;
    const ChangeInFlight change(changing_);
    beginRemoveRows({}, row, row);
    sweeps_.erase(sweeps_.begin() + row);
    reindex();
    endRemoveRows();
  }
  return ok;
}

bool SweepTreeModel::deleteRuns(const std::vector<int64_t>& ids) {
  if (!store_) return false;
  bool ok = true;
  for (int64_t id : ids) {
    ++local_changes_;
    std::optional<int64_t> sweep_id;
    try {
      sweep_id = store_->sweepOfRun(id);
      store_->deleteRun(id);
    } catch (const std::exception& e) {
      Q_EMIT storeError(qs(e.what()));
      ok = false;
      continue;
    }
    const QModelIndex run = sweep_id ? runIndex(*sweep_id, id) : QModelIndex();
    if (!run.isValid()) continue;
    const int row = run.parent().row();
    auto& runs = sweeps_[static_cast<size_t>(row)].runs;
    const ChangeInFlight change(changing_);
    beginRemoveRows(run.parent(), run.row(), run.row());
    runs.erase(runs.begin() + run.row());
    endRemoveRows();
    countsChanged(row);
  }
  return ok;
}

const SweepTreeModel::SweepNode* SweepTreeModel::nodeOf(const QModelIndex& index) const {
  const int row = index.internalId() == 0 ? index.row() : sweepRow(static_cast<int64_t>(index.internalId()));
  return row >= 0 && row < static_cast<int>(sweeps_.size()) ? &sweeps_[static_cast<size_t>(row)] : nullptr;
}

QModelIndex SweepTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= ColumnCount) return {};
  if (!parent.isValid())
    return row < static_cast<int>(sweeps_.size()) ? createIndex(row, column, quintptr(0)) : QModelIndex();
  if (parent.column() != 0 || parent.internalId() != 0 || parent.row() >= static_cast<int>(sweeps_.size())) return {};
  const SweepNode& s = sweeps_[static_cast<size_t>(parent.row())];
  if (row >= static_cast<int>(s.runs.size())) return {};
  return createIndex(row, column, static_cast<quintptr>(s.info.id));
}

QModelIndex SweepTreeModel::parent(const QModelIndex& child) const {
  if (!child.isValid() || child.internalId() == 0) return {};
  const int row = sweepRow(static_cast<int64_t>(child.internalId()));
  return row < 0 ? QModelIndex() : createIndex(row, 0, quintptr(0));
}

int SweepTreeModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(sweeps_.size());
  if (parent.column() != 0 || parent.internalId() != 0) return 0;
  return static_cast<int>(sweeps_[static_cast<size_t>(parent.row())].runs.size());  // 0 until fetched
}

int SweepTreeModel::columnCount(const QModelIndex&) const { return ColumnCount; }

bool SweepTreeModel::hasChildren(const QModelIndex& parent) const {
  if (!parent.isValid()) return !sweeps_.empty();
  if (parent.column() != 0 || parent.internalId() != 0) return false;
  const SweepNode& s = sweeps_[static_cast<size_t>(parent.row())];
  // Not read yet: the stored count answers without reading every run of every sweep.
  return s.read ? !s.runs.empty() : s.info.run_count > 0;
}

QVariant SweepTreeModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this) return {};
  const SweepNode* s = nodeOf(index);
  if (!s) return {};
  if (role == SweepIdRole) return QVariant::fromValue<qlonglong>(s->info.id);
  if (index.internalId() == 0) return sweepData(*s, index.column(), role);
  if (index.row() >= static_cast<int>(s->runs.size())) return {};
  return runData(s->runs[static_cast<size_t>(index.row())], index.column(), role);
}

QVariant SweepTreeModel::sweepData(const SweepNode& s, int column, int role) const {
  const SweepInfo& i = s.info;
  QStringList tags;
  for (const auto& t : i.tags) tags << qs(t);
  const QString created = QDateTime::fromMSecsSinceEpoch(i.created_unix_ms).toString("yyyy-MM-dd HH:mm");
  switch (role) {
    case RunIdRole: return QVariant::fromValue<qlonglong>(0);
    case FilterRole:
      return column == 0 ? QStringList{QStringLiteral("S%1").arg(i.id), qs(i.name), qs(i.state), created,
                                       tags.join(' '), qs(i.notes)}.join('\n')
                         : QVariant();
    case Qt::ToolTipRole: {
      QString tip = tr("Sweep S%1: %2\ncreated %3, %4\n%5 runs, %6")
                        .arg(i.id).arg(qs(i.name), created, qs(i.state)).arg(i.run_count).arg(qs(okSummary(i)));
      if (!tags.isEmpty()) tip += tr("\ntags: %1").arg(tags.join(", "));
      if (!i.notes.empty()) tip += tr("\nnotes: %1").arg(qs(i.notes));
      if (i.state == "interrupted")
        tip += tr("\nThe process that ran this sweep ended before finishing it (killed, crashed or out of disk); "
                  "the points it saved are kept.");
      if (!i.task_states.empty())
        tip += tr("\nSubmitted to Slurm: while it is listed here, the window asks squeue and sacct every few seconds "
                  "and merges each task's shard as it ends (so do attnscope sweep --wait and attnscope slurm status S%1); "
                  "tasks as last seen: %2").arg(i.id).arg(taskSummary(i));
      if (!i.error.empty()) tip += "\n" + qs(i.error);
      return tip;
    }
    case Qt::TextAlignmentRole:
      return column == PointsColumn ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DisplayRole:
    case Qt::EditRole: break;
    default: return {};
  }
  const bool edit = role == Qt::EditRole;
  switch (column) {
    case IdColumn: return edit ? QVariant::fromValue<qlonglong>(i.id) : QVariant(QStringLiteral("S%1").arg(i.id));
    case NameColumn: return qs(i.name);
    case StateColumn:
      return i.task_states.empty() || edit ? QVariant(qs(i.state)) : QVariant(qs(i.state) + " (" + taskSummary(i) + ")");
    case PointsColumn:
      if (edit) return QVariant::fromValue<qlonglong>(i.run_count);
      return i.ok_count > i.ok_every_row
                 ? tr("%1/%2 ok (%3 not every row checked)").arg(i.ok_count).arg(i.run_count).arg(i.ok_count - i.ok_every_row)
                 : tr("%1/%2 ok").arg(i.ok_count).arg(i.run_count);
    case CreatedColumn: return edit ? QVariant::fromValue<qlonglong>(i.created_unix_ms) : QVariant(created);
    case TagsColumn: return tags.join(", ");
    case NotesColumn: return qs(i.notes);
  }
  return {};
}

QVariant SweepTreeModel::runData(const RunRow& r, int column, int role) const {
  const QString peak = r.measured_peak >= 0 ? qs(formatBytes(r.measured_peak)) : QStringLiteral("-");
  const QString median = r.ok ? qs(durationText(r.median_s)) : QStringLiteral("-");
  switch (role) {
    case RunIdRole: return QVariant::fromValue<qlonglong>(r.id);
    case FilterRole:
      return column == 0 ? QStringList{QStringLiteral("R%1").arg(r.id), qs(r.backend), qs(r.spec), qs(r.status),
                                       qs(r.message)}.join('\n')
                         : QVariant();
    case Qt::ToolTipRole: {
      QString tip = tr("Run R%1: %2 (%3)\n%4\nmeasured peak %5, predicted %6\nmedian %7")
                        .arg(r.id).arg(qs(r.backend), qs(r.status), qs(r.spec), peak,
                                       r.predicted_peak >= 0 ? qs(formatBytes(r.predicted_peak)) : QStringLiteral("-"),
                                       median);
      if (!r.message.empty()) tip += "\n" + qs(r.message);
      return tip;
    }
    case Qt::DecorationRole:
      return column == NameColumn ? QVariant(backendColor(r.backend)) : QVariant();
    case Qt::ForegroundRole:
      return column == StateColumn && !r.ok ? QVariant(QColor(0xd0, 0x3a, 0x3a)) : QVariant();
    case Qt::TextAlignmentRole:
      return column == PeakColumn || column == MedianColumn ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter)
                                                             : QVariant();
    case Qt::DisplayRole:
    case Qt::EditRole: break;
    default: return {};
  }
  const bool edit = role == Qt::EditRole;
  switch (column) {
    case IdColumn: return edit ? QVariant::fromValue<qlonglong>(r.id) : QVariant(QStringLiteral("R%1").arg(r.id));
    case NameColumn: return r.point + ' ' + qs(r.backend);
    case StateColumn: return qs(r.status);
    case PeakColumn: return edit ? QVariant::fromValue<qlonglong>(r.measured_peak) : QVariant(peak);
    case MedianColumn: return edit ? QVariant(r.median_s) : QVariant(median);
    case SpecColumn: return qs(r.spec);
    case NotesColumn: return qs(r.message);
  }
  return {};
}

QVariant SweepTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  static const char* names[] = {"Id", "Name", "State", "Points", "Peak", "Median", "Created", "Tags", "Notes", "Spec"};
  static const char* tips[] = {"S: sweep, R: run", "Sweep name, or the run's backend", "Sweep state or run status",
                               "Finished points: ok / all", "Measured peak memory of a run", "Median time of a run",
                               "When the sweep was created", "Tags of the sweep (comma separated)",
                               "Notes of the sweep; a run's message", "The run's workload"};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) return tr(tips[section]);
  return {};
}

bool SweepTreeModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!store_ || role != Qt::EditRole || !index.isValid() || index.model() != this || index.internalId() != 0)
    return false;
  SweepInfo& s = sweeps_[static_cast<size_t>(index.row())].info;
  const QString text = value.toString().trimmed();
  ++local_changes_;
  try {
    switch (index.column()) {
      case NameColumn:
        if (text.isEmpty()) return false;
        store_->renameSweep(s.id, text.toStdString());
        s.name = text.toStdString();
        break;
      case TagsColumn: {
        std::vector<std::string> tags;
        for (const QString& t : text.split(QRegularExpression("\\s*,\\s*"), Qt::SkipEmptyParts))
          tags.push_back(t.toStdString());
        store_->setSweepTags(s.id, tags);
        s.tags = tags;
        break;
      }
      case NotesColumn:
        store_->setSweepNotes(s.id, value.toString().toStdString());
        s.notes = value.toString().toStdString();
        break;
      default: return false;
    }
  } catch (const std::exception& e) {
    Q_EMIT storeError(qs(e.what()));
    return false;
  }
  // The tooltip and the filter text of column 0 change with every edit.
  Q_EMIT dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
  return true;
}

Qt::ItemFlags SweepTreeModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.internalId() != 0) return f | Qt::ItemNeverHasChildren;
  const int c = index.column();
  if (c == NameColumn || c == TagsColumn || c == NotesColumn) f |= Qt::ItemIsEditable;
  return f;
}

}  // namespace attnscope::ui
