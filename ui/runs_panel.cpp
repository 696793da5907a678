#include "ui/runs_panel.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "ui/sweep_list_model.h"

namespace attnscope::ui {

RunsPanel::RunsPanel(SweepListModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setSortRole(Qt::EditRole);
  filter_ = new QLineEdit(this);
  filter_->setObjectName("runsFilter");
  filter_->setPlaceholderText(tr("Filter by name, tag, state, notes..."));
  filter_->setClearButtonEnabled(true);
  view_ = new QTableView(this);
  view_->setObjectName("runsView");
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(SweepListModel::IdColumn, Qt::DescendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  view_->verticalHeader()->hide();
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setAlternatingRowColors(true);
  delete_ = new QPushButton(tr("Delete..."), this);
  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setToolTip(tr("Overlay the selected sweeps (select two or more)"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(compare_);
  buttons->addStretch();
  buttons->addWidget(delete_);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(filter_);
  layout->addWidget(view_, 1);
  layout->addLayout(buttons);
  connect(filter_, &QLineEdit::textChanged, proxy_, &QSortFilterProxyModel::setFilterFixedString);
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPanel::onSelectionChanged);
  connect(model_, &QAbstractItemModel::modelReset, this, &RunsPanel::onSelectionChanged);
  connect(delete_, &QPushButton::clicked, this, &RunsPanel::deleteSelected);
  connect(compare_, &QPushButton::clicked, this, [this] {
    QList<qint64> ids;
    for (int64_t id : selectedSweepIds()) ids << id;
    if (ids.size() >= 2) Q_EMIT compareRequested(ids);
  });
  onSelectionChanged();
}

std::vector<int64_t> RunsPanel::selectedSweepIds() const {
  std::vector<int64_t> ids;
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    ids.push_back(proxy_->data(i, SweepListModel::SweepIdRole).toLongLong());
  return ids;
}

void RunsPanel::selectSweep(int64_t sweep_id) {
  const int row = model_->rowOf(sweep_id);
  if (row < 0) return;
  const QModelIndex i = proxy_->mapFromSource(model_->index(row, 0));
  if (!i.isValid()) return;
  view_->selectionModel()->select(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(i);
}

void RunsPanel::onSelectionChanged() {
  const auto ids = selectedSweepIds();
  delete_->setEnabled(!ids.empty());
  compare_->setEnabled(ids.size() >= 2);
  if (ids.size() == 1) Q_EMIT sweepSelected(ids.front());
}

void RunsPanel::deleteSelected() {
  const auto ids = selectedSweepIds();
  if (ids.empty()) return;
  if (confirm_deletes_ &&
      QMessageBox::question(this, tr("Delete sweeps"),
                            tr("Delete %n sweep(s) and all their runs from the database? This cannot be undone.",
                               "", static_cast<int>(ids.size()))) != QMessageBox::Yes)
    return;
  model_->deleteSweeps(ids);
}

}  // namespace attnscope::ui
