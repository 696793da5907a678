#include "ui/backend_list_model.h"

#include <QColor>
#include <QIcon>
#include <QPainter>
#include <QPixmap>

#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

QIcon markIcon(BackendListModel::State state, const std::string& id) {
  static const QColor colors[] = {QColor(0x2e, 0xa0, 0x43), QColor(0xe0, 0x9b, 0x12), QColor(0xd0, 0x3a, 0x3a)};
  QPixmap pm(28, 14);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  p.setPen(Qt::NoPen);
  p.setBrush(colors[state]);
  p.drawEllipse(QRectF(1, 1, 12, 12));
  // The backend's chart colour next to the mark, so the list doubles as a legend.
  p.setBrush(backendColor(id));
  p.drawRect(QRectF(17, 3, 10, 8));
  return QIcon(pm);
}

}  // namespace

BackendListModel::BackendListModel(const BackendRegistry& registry, QObject* parent)
    : QAbstractListModel(parent), registry_(registry) {
  for (Backend* b : registry_.all()) {
    const bool available = b->availability().available;
    rows_.push_back({b, available, available ? Supported : Unavailable, {}});
  }
  setSpec(WorkloadSpec{});
}

int BackendListModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

QVariant BackendListModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Row& r = rows_[static_cast<size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
    case IdRole: return QString::fromStdString(r.backend->id());
    case Qt::DecorationRole: return markIcon(r.state, r.backend->id());
    case Qt::CheckStateRole: return r.checked ? Qt::Checked : Qt::Unchecked;
    case Qt::ToolTipRole:
      return QString::fromStdString(r.backend->description()) + (r.detail.isEmpty() ? QString() : "\n" + r.detail);
    case DetailRole: return r.detail;
    case StateRole: return static_cast<int>(r.state);
    default: return {};
  }
}

bool BackendListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) ||
      role != Qt::CheckStateRole)
    return false;
  rows_[static_cast<size_t>(index.row())].checked = value.toInt() == Qt::Checked;
  Q_EMIT dataChanged(index, index, {Qt::CheckStateRole});
  Q_EMIT checkedChanged();
  return true;
}

Qt::ItemFlags BackendListModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable;
}

void BackendListModel::setSpec(const WorkloadSpec& spec) {
  const bool spec_valid = validate(spec).empty();
  for (Row& r : rows_) {
    const Availability a = r.backend->availability();
    if (!a.available) {
      r.state = Unavailable;
      r.detail = tr("unavailable: %1").arg(QString::fromStdString(a.reason));
      continue;
    }
    if (!spec_valid) {
      r.state = Supported;
      r.detail = tr("(fix the workload to check support)");
      continue;
    }
    const Support s = r.backend->support(spec);
    r.state = s.ok() ? Supported : Unsupported;
    QStringList reasons;
    for (const auto& why : s.reasons) reasons << QString::fromStdString(why);
    r.detail = s.ok() ? tr("can run %1").arg(QString::fromStdString(summary(spec)))
                      : tr("cannot run this spec: %1").arg(reasons.join("; "));
    if (s.ok() && !s.note.empty()) r.detail += "; " + QString::fromStdString(s.note);
  }
  if (!rows_.empty())
    Q_EMIT dataChanged(index(0), index(static_cast<int>(rows_.size()) - 1),
                       {Qt::DecorationRole, Qt::ToolTipRole, DetailRole, StateRole});
}

std::vector<std::string> BackendListModel::checkedIds() const {
  std::vector<std::string> ids;
  for (const Row& r : rows_)
    if (r.checked) ids.push_back(r.backend->id());
  return ids;
}

std::vector<Backend*> BackendListModel::checkedBackends() const {
  std::vector<Backend*> out;
  for (const Row& r : rows_)
    if (r.checked) out.push_back(r.backend);
  return out;
}

void BackendListModel::setCheckedIds(const std::vector<std::string>& ids) {
  for (size_t i = 0; i < rows_.size(); ++i) {
    const bool c = std::find(ids.begin(), ids.end(), rows_[i].backend->id()) != ids.end();
    if (c != rows_[i].checked) {
      rows_[i].checked = c;
      const QModelIndex idx = index(static_cast<int>(i));
      Q_EMIT dataChanged(idx, idx, {Qt::CheckStateRole});
    }
  }
  Q_EMIT checkedChanged();
}

}  // namespace attnscope::ui
