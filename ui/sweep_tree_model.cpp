#include "ui/sweep_list_model.h"

#include <QDateTime>
#include <QRegularExpression>

namespace attnscope::ui {

SweepListModel::SweepListModel(QObject* parent) : QAbstractTableModel(parent) {}

void SweepListModel::setStore(Store* store) {
  store_ = store;
  reload();
}

void SweepListModel::reload() {
  beginResetModel();
  sweeps_.clear();
  if (store_) {
    try {
      sweeps_ = store_->sweeps();
    } catch (const std::exception& e) {
      Q_EMIT storeError(QString::fromStdString(e.what()));
    }
  }
  endResetModel();
}

int64_t SweepListModel::sweepId(int row) const {
  return row >= 0 && row < static_cast<int>(sweeps_.size()) ? sweeps_[static_cast<size_t>(row)].id : 0;
}

int SweepListModel::rowOf(int64_t id) const {
  for (size_t i = 0; i < sweeps_.size(); ++i)
    if (sweeps_[i].id == id) return static_cast<int>(i);
  return -1;
}

bool SweepListModel::deleteSweeps(const std::vector<int64_t>& ids) {
  if (!store_) return false;
  bool ok = true;
  for (int64_t id : ids) {
    try {
      store_->deleteSweep(id);
    } catch (const std::exception& e) {
      Q_EMIT storeError(QString::fromStdString(e.what()));
      ok = false;
    }
  }
  reload();
  return ok;
}

int SweepListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(sweeps_.size());
}

int SweepListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant SweepListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const SweepInfo& s = sweeps_[static_cast<size_t>(index.row())];
  if (role == SweepIdRole) return QVariant::fromValue<qlonglong>(s.id);
  if (role == Qt::TextAlignmentRole && (index.column() == IdColumn || index.column() == RunsColumn))
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::EditRole && role != Qt::ToolTipRole) return {};
  QStringList tags;
  for (const auto& t : s.tags) tags << QString::fromStdString(t);
  switch (index.column()) {
    case IdColumn: return role == Qt::DisplayRole ? QVariant(QString::number(s.id)) : QVariant::fromValue<qlonglong>(s.id);
    case NameColumn: return QString::fromStdString(s.name);
    case CreatedColumn:
      return QDateTime::fromMSecsSinceEpoch(s.created_unix_ms).toString(role == Qt::ToolTipRole ? Qt::ISODateWithMs : Qt::ISODate);
    case StateColumn: return QString::fromStdString(s.state);
    case RunsColumn:
      return role == Qt::EditRole ? QVariant::fromValue<qlonglong>(s.run_count)
                                  : QVariant(tr("%1 (%2 ok)").arg(s.run_count).arg(s.ok_count));
    case TagsColumn: return tags.join(", ");
    case NotesColumn: return QString::fromStdString(s.notes);
  }
  return {};
}

QVariant SweepListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount) return {};
  static const char* names[] = {"Id", "Name", "Created", "State", "Runs", "Tags", "Notes"};
  return tr(names[section]);
}

bool SweepListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!store_ || role != Qt::EditRole ||
      !checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
    return false;
  SweepInfo& s = sweeps_[static_cast<size_t>(index.row())];
  const QString text = value.toString().trimmed();
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
    Q_EMIT storeError(QString::fromStdString(e.what()));
    return false;
  }
  Q_EMIT dataChanged(index, index);
  return true;
}

Qt::ItemFlags SweepListModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
  if (index.column() == NameColumn || index.column() == TagsColumn || index.column() == NotesColumn)
    f |= Qt::ItemIsEditable;
  return f;
}

}  // namespace attnscope::ui
