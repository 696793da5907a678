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

}  // namespace attnscope::ui
