#include "ui/sweep_tree_filter.h"

#include "ui/sweep_tree_model.h"

namespace attnscope::ui {

SweepTreeFilter::SweepTreeFilter(QObject* parent) : QSortFilterProxyModel(parent) {
  setRecursiveFilteringEnabled(true);
  setAutoAcceptChildRows(true);
  setFilterKeyColumn(SweepTreeModel::IdColumn);
  setFilterRole(SweepTreeModel::FilterRole);
  setFilterCaseSensitivity(Qt::CaseInsensitive);
  setSortRole(Qt::EditRole);
}

bool SweepTreeFilter::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const bool runs = left.parent().isValid();
  if (runs && left.column() == SweepTreeModel::IdColumn && sortOrder() == Qt::DescendingOrder)
    return QSortFilterProxyModel::lessThan(right, left);
  return QSortFilterProxyModel::lessThan(left, right);
}

}  // namespace attnscope::ui
