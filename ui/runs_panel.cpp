#include "ui/runs_panel.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/sweep_tree_filter.h"
#include "ui/sweep_tree_model.h"

namespace attnscope::ui {

RunsPanel::RunsPanel(SweepTreeModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  proxy_ = new SweepTreeFilter(this);
  proxy_->setSourceModel(model_);
  filter_ = new QLineEdit(this);
  filter_->setObjectName("runsFilter");
  filter_->setPlaceholderText(tr("Filter: name, tag, backend, status, S12, R345..."));
  filter_->setClearButtonEnabled(true);
  view_ = new QTreeView(this);
  view_->setObjectName("runsView");
  view_->setModel(proxy_);
  view_->setSortingEnabled(true);
  view_->sortByColumn(SweepTreeModel::IdColumn, Qt::DescendingOrder);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  view_->setUniformRowHeights(true);
  view_->setAllColumnsShowFocus(true);
  view_->setAlternatingRowColors(true);
  view_->setIndentation(view_->fontMetrics().horizontalAdvance("M") + 2);
  // The dock is narrow: id, name and state show; the rest is in each row's tooltip and can be
  // shown from the header's context menu.
  QHeaderView* header = view_->header();
  header->setStretchLastSection(false);
  header->setSectionResizeMode(QHeaderView::Interactive);
  header->setSectionResizeMode(SweepTreeModel::NameColumn, QHeaderView::Stretch);
  header->setMinimumSectionSize(view_->fontMetrics().horizontalAdvance("Id") + 16);
  const QFontMetrics fm = view_->fontMetrics();
  // Id: the branch mark and a run's indent before "R1234"; State: "finished" whole, longer
  // statuses elided (the tooltip has them).
  view_->setColumnWidth(SweepTreeModel::IdColumn, view_->indentation() * 2 + fm.horizontalAdvance("R0000") + 8);
  view_->setColumnWidth(SweepTreeModel::StateColumn, fm.horizontalAdvance("finished") + 12);
  for (int c = SweepTreeModel::PointsColumn; c < SweepTreeModel::ColumnCount; ++c) view_->setColumnHidden(c, true);
  header->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(header, &QWidget::customContextMenuRequested, this, &RunsPanel::showHeaderMenu);

  delete_ = new QPushButton(tr("Delete..."), this);
  delete_->setToolTip(tr("Delete the selected sweeps or runs from the database"));
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
  connect(filter_, &QLineEdit::textChanged, this, &RunsPanel::setFilter);
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
    if (!i.parent().isValid()) ids.push_back(i.data(SweepTreeModel::SweepIdRole).toLongLong());
  return ids;
}

std::vector<int64_t> RunsPanel::selectedRunIds() const {
  std::vector<int64_t> ids;
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    if (i.parent().isValid()) ids.push_back(i.data(SweepTreeModel::RunIdRole).toLongLong());
  return ids;
}

QSize RunsPanel::sizeHint() const {
  // Wide enough for id, "cpu.reference H16 L1024" and a state without eliding.
  return {fontMetrics().horizontalAdvance(QStringLiteral("R0000 cpu.reference H16 L1024 finished")) + 72,
          QWidget::sizeHint().height()};
}

void RunsPanel::select(const QModelIndex& source) {
  const QModelIndex i = proxy_->mapFromSource(source);
  if (!i.isValid()) return;
  if (i.parent().isValid()) view_->expand(i.parent());
  view_->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  view_->scrollTo(i);
}

void RunsPanel::selectSweep(int64_t sweep_id) { select(model_->sweepIndex(sweep_id)); }

void RunsPanel::selectRun(int64_t sweep_id, int64_t run_id) {
  select(model_->runIndex(sweep_id, run_id));
}

void RunsPanel::expandSweep(int64_t sweep_id) {
  view_->expand(proxy_->mapFromSource(model_->sweepIndex(sweep_id)));
}

void RunsPanel::selectFirstSweep() {
  if (proxy_->rowCount() > 0) select(proxy_->mapToSource(proxy_->index(0, 0)));
}

void RunsPanel::setFilter(const QString& text) {
  // The filter looks into runs too: read the sweeps not expanded yet, once, before filtering
  // (the model reads only when asked, never while the proxy calls rowCount).
  if (!text.isEmpty()) model_->fetchAll();
  proxy_->setFilterFixedString(text);
  if (text.isEmpty()) return;
  // Open the sweeps that stay only because some of their runs match.
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex p = proxy_->index(r, 0);
    if (proxy_->rowCount(p) < model_->rowCount(proxy_->mapToSource(p))) view_->expand(p);
  }
}

void RunsPanel::showHeaderMenu(const QPoint& pos) {
  QMenu menu(this);
  for (int c = SweepTreeModel::NameColumn; c < SweepTreeModel::ColumnCount; ++c) {
    QAction* a = menu.addAction(model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    a->setCheckable(true);
    a->setChecked(!view_->isColumnHidden(c));
    connect(a, &QAction::toggled, this, [this, c](bool on) { view_->setColumnHidden(c, !on); });
  }
  menu.exec(view_->header()->mapToGlobal(pos));
}

void RunsPanel::onSelectionChanged() {
  const auto sweeps = selectedSweepIds();
  const auto runs = selectedRunIds();
  delete_->setEnabled(!sweeps.empty() || !runs.empty());
  compare_->setEnabled(sweeps.size() >= 2);
  if (sweeps.size() == 1 && runs.empty()) Q_EMIT sweepSelected(sweeps.front());
  if (runs.size() == 1 && sweeps.empty()) {
    const QModelIndexList rows = view_->selectionModel()->selectedRows();
    Q_EMIT runSelected(rows.front().data(SweepTreeModel::SweepIdRole).toLongLong(), runs.front());
  }
}

void RunsPanel::deleteSelected() {
  const auto sweeps = selectedSweepIds();
  std::vector<int64_t> runs;
  // A run of a sweep that is deleted as well goes with its sweep.
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    if (i.parent().isValid() &&
        std::find(sweeps.begin(), sweeps.end(), i.data(SweepTreeModel::SweepIdRole).toLongLong()) == sweeps.end())
      runs.push_back(i.data(SweepTreeModel::RunIdRole).toLongLong());
  if (sweeps.empty() && runs.empty()) return;
  QStringList what;
  if (!sweeps.empty()) what << tr("%n sweep(s) with all their runs", "", static_cast<int>(sweeps.size()));
  if (!runs.empty()) what << tr("%n run(s)", "", static_cast<int>(runs.size()));
  if (confirm_deletes_ &&
      QMessageBox::question(this, tr("Delete from the database"),
                            tr("Delete %1 from the database? This cannot be undone.").arg(what.join(tr(" and ")))) !=
          QMessageBox::Yes)
    return;
  model_->deleteRuns(runs);
  model_->deleteSweeps(sweeps);
  onSelectionChanged();
  Q_EMIT deleted();
}

}  // namespace attnscope::ui
