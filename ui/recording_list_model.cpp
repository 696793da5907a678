#include "ui/recording_list_model.h"

#include <unordered_set>

#include <QColor>
#include <QDateTime>

namespace attnscope::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString programText(const Recording& r) {
  QStringList args;
  for (const auto& a : r.program) args << qs(a);
  return args.join(' ');
}

// Short enough for the narrow dock; the tooltip has exitText()'s words.
QString exitCell(const Recording& r) {
  if (!r.error.empty()) return QStringLiteral("?");
  if (r.interrupted) return QObject::tr("interrupted");
  return r.exit_status ? QObject::tr("exit %1").arg(*r.exit_status) : QObject::tr("signal %1").arg(r.exit_signal);
}

}  // namespace

RecordingListModel::RecordingListModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecordingListModel::setStore(Store* store) {
  beginResetModel();
  store_ = store;
  rows_.clear();
  reindex();
  ++local_changes_;  // a listing of the previous database is not this one's
  endResetModel();
}

void RecordingListModel::reindex() {
  index_.clear();
  for (size_t i = 0; i < rows_.size(); ++i) index_[rows_[i].id] = static_cast<int>(i);
}

int RecordingListModel::rowOf(int64_t id) const {
  const auto it = index_.find(id);
  return it == index_.end() ? -1 : it->second;
}

void RecordingListModel::setRecordings(std::vector<Recording> listed) {
  std::unordered_set<int64_t> ids;
  for (const Recording& r : listed) ids.insert(r.id);
  // From the last row up, so the rows above keep their numbers while others go.
  for (int row = static_cast<int>(rows_.size()) - 1; row >= 0; --row) {
    if (ids.count(rows_[static_cast<size_t>(row)].id)) continue;
    beginRemoveRows({}, row, row);
    rows_.erase(rows_.begin() + row);
    reindex();
    endRemoveRows();
  }
  for (Recording& r : listed) {
    const int row = rowOf(r.id);
    if (row < 0) {
      const int n = static_cast<int>(rows_.size());
      beginInsertRows({}, n, n);
      rows_.push_back(std::move(r));
      reindex();
      endInsertRows();
      continue;
    }
    Recording& held = rows_[static_cast<size_t>(row)];
    // A recording is saved whole; only its name changes afterwards (or its row turns unreadable).
    if (held.name == r.name && held.error == r.error) continue;
    held = std::move(r);
    Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
  }
}

bool RecordingListModel::deleteRecordings(const std::vector<int64_t>& ids) {
  if (!store_) return false;
  bool ok = true;
  for (int64_t id : ids) {
    ++local_changes_;
    try {
      store_->deleteRecording(id);
    } catch (const std::exception& e) {
      Q_EMIT storeError(qs(e.what()));
      ok = false;
      continue;
    }
    const int row = rowOf(id);
    if (row < 0) continue;
    beginRemoveRows({}, row, row);
    rows_.erase(rows_.begin() + row);
    reindex();
    endRemoveRows();
  }
  return ok;
}

QModelIndex RecordingListModel::recordingIndex(int64_t id, int column) const {
  const int row = rowOf(id);
  return row < 0 ? QModelIndex() : index(row, column);
}

int RecordingListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int RecordingListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RecordingListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.model() != this || index.row() >= static_cast<int>(rows_.size())) return {};
  const Recording& r = rows_[static_cast<size_t>(index.row())];
  const QString created = QDateTime::fromMSecsSinceEpoch(r.started_unix_ms).toString("yyyy-MM-dd HH:mm");  // as a sweep's
  const bool failed = !r.error.empty() || r.exitCode() != 0;
  switch (role) {
    case RecordingIdRole: return QVariant::fromValue<qlonglong>(r.id);
    case FilterRole:
      return index.column() == 0 ? QStringList{qs(r.idText()), qs(r.name), created, programText(r), qs(r.exitText())}.join('\n')
                                 : QVariant();
    case Qt::ToolTipRole: {
      if (!r.error.empty()) return tr("Recording %1: %2\n%3").arg(qs(r.idText()), qs(r.name), qs(r.error));
      QString tip = tr("Recording %1: %2\n%3\nstarted %4, %5\n%6 calls seen")
                        .arg(qs(r.idText()), qs(r.name), programText(r), created, qs(r.exitText()))
                        .arg(r.calls_seen);
      if (r.calls_dropped > 0) tip += tr(" (%1 not kept: too many signatures)").arg(r.calls_dropped);
      if (!r.complete) tip += tr("\nthe recorder's last write kept (the program was killed)");
      if (!r.note.empty()) tip += "\n" + qs(r.note);
      return tip;
    }
    case Qt::ForegroundRole:
      return index.column() == ExitColumn && failed ? QVariant(QColor(0xd0, 0x3a, 0x3a)) : QVariant();
    case Qt::TextAlignmentRole:
      return index.column() == CallsColumn ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter) : QVariant();
    case Qt::DisplayRole:
    case Qt::EditRole: break;
    default: return {};
  }
  const bool edit = role == Qt::EditRole;
  switch (index.column()) {
    case IdColumn: return edit ? QVariant::fromValue<qlonglong>(r.id) : QVariant(qs(r.idText()));
    case NameColumn: return qs(r.name);
    case ExitColumn: return edit ? QVariant(r.exitCode()) : QVariant(exitCell(r));
    case CallsColumn: return edit ? QVariant::fromValue<qlonglong>(r.calls_seen) : QVariant(QString::number(r.calls_seen));
    case CreatedColumn: return edit ? QVariant::fromValue<qlonglong>(r.started_unix_ms) : QVariant(created);
    case ProgramColumn: return programText(r);
  }
  return {};
}

QVariant RecordingListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
  static const char* names[] = {"Id", "Name", "Exit", "Calls", "Created", "Program"};
  static const char* tips[] = {"REC<n>: a recording (attnscope record)", "Recording name", "How the program ended",
                               "Attention calls the recorder saw", "When the program started",
                               "The program and its arguments as started"};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) return tr(tips[section]);
  return {};
}

bool RecordingListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!store_ || role != Qt::EditRole || !index.isValid() || index.model() != this || index.column() != NameColumn)
    return false;
  Recording& r = rows_[static_cast<size_t>(index.row())];
  const QString text = value.toString().trimmed();
  if (text.isEmpty()) return false;
  ++local_changes_;
  try {
    store_->renameRecording(r.id, text.toStdString());
  } catch (const std::exception& e) {
    Q_EMIT storeError(qs(e.what()));
    return false;
  }
  r.name = text.toStdString();
  // The tooltip and the filter text of column 0 change too.
  Q_EMIT dataChanged(this->index(index.row(), 0), this->index(index.row(), ColumnCount - 1));
  return true;
}

Qt::ItemFlags RecordingListModel::flags(const QModelIndex& index) const {
  if (!index.isValid() || index.model() != this) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
  if (index.column() == NameColumn && rows_[static_cast<size_t>(index.row())].error.empty()) f |= Qt::ItemIsEditable;
  return f;
}

}  // namespace attnscope::ui
