#include "ui/runs_panel.h"

#include <algorithm>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include "ui/recording_list_model.h"
#include "ui/sweep_tree_filter.h"
#include "ui/sweep_tree_model.h"

namespace attnscope::ui {

RunsPanel::RunsPanel(SweepTreeModel* model, RecordingListModel* recordings, QWidget* parent)
    : QWidget(parent), model_(model), recordings_(recordings) {
  proxy_ = new SweepTreeFilter(this);
  proxy_->setSourceModel(model_);
  filter_ = new QLineEdit(this);
  filter_->setObjectName("runsFilter");
  filter_->setPlaceholderText(tr("Filter: name, tag, backend, status, S12, R345, REC3..."));
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
  connect(header, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) { showHeaderMenu(view_, pos); });

  recordings_proxy_ = new QSortFilterProxyModel(this);
  recordings_proxy_->setSourceModel(recordings_);
  recordings_proxy_->setFilterKeyColumn(RecordingListModel::IdColumn);
  recordings_proxy_->setFilterRole(RecordingListModel::FilterRole);
  recordings_proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  recordings_proxy_->setSortRole(Qt::EditRole);
  recordings_view_ = new QTreeView(this);
  recordings_view_->setObjectName("recordingsView");
  recordings_view_->setModel(recordings_proxy_);
  recordings_view_->setRootIsDecorated(false);
  recordings_view_->setSortingEnabled(true);
  recordings_view_->sortByColumn(RecordingListModel::IdColumn, Qt::DescendingOrder);
  recordings_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  recordings_view_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  recordings_view_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  recordings_view_->setUniformRowHeights(true);
  recordings_view_->setAllColumnsShowFocus(true);
  recordings_view_->setAlternatingRowColors(true);
  // Id, name, exit and calls show, as id, name and state do above; the rest is in the tooltip
  // and the header's context menu.
  QHeaderView* rec_header = recordings_view_->header();
  rec_header->setStretchLastSection(false);
  rec_header->setSectionResizeMode(QHeaderView::Interactive);
  rec_header->setSectionResizeMode(RecordingListModel::NameColumn, QHeaderView::Stretch);
  recordings_view_->setColumnWidth(RecordingListModel::IdColumn, fm.horizontalAdvance("REC0000") + 12);
  recordings_view_->setColumnWidth(RecordingListModel::ExitColumn, fm.horizontalAdvance("signal 15") + 12);
  recordings_view_->setColumnWidth(RecordingListModel::CallsColumn, fm.horizontalAdvance("Calls") + 16);
  for (int c = RecordingListModel::CreatedColumn; c < RecordingListModel::ColumnCount; ++c) recordings_view_->setColumnHidden(c, true);
  rec_header->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(rec_header, &QWidget::customContextMenuRequested, this,
          [this](const QPoint& pos) { showHeaderMenu(recordings_view_, pos); });
  auto* recordings_label = new QLabel(this);
  recordings_label->setObjectName("recordingsLabel");
  recordings_label->setWordWrap(true);  // the hint must not set the dock's width
  auto count_recordings = [this, recordings_label] {
    const int n = recordings_->rowCount();
    recordings_label->setText(n > 0 ? tr("Recordings (%1)").arg(n)
                                    : tr("Recordings: none yet (attnscope record -- SCRIPT.py makes one)"));
  };
  for (auto signal : {&QAbstractItemModel::rowsInserted, &QAbstractItemModel::rowsRemoved})
    connect(recordings_, signal, this, count_recordings);
  connect(recordings_, &QAbstractItemModel::modelReset, this, count_recordings);
  count_recordings();

  delete_ = new QPushButton(tr("Delete..."), this);
  delete_->setToolTip(tr("Delete the selected sweeps, runs or recordings from the database"));
  compare_ = new QPushButton(tr("Compare"), this);
  compare_->setToolTip(tr("Overlay the selected sweeps (select two or more)"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(compare_);
  buttons->addStretch();
  buttons->addWidget(delete_);
  // The sweeps above, the recordings below; the splitter lets either take the height.
  auto* split = new QSplitter(Qt::Vertical, this);
  split->setChildrenCollapsible(false);
  split->addWidget(view_);
  auto* recordings_box = new QWidget(split);
  auto* recordings_layout = new QVBoxLayout(recordings_box);
  recordings_layout->setContentsMargins(0, 4, 0, 0);
  recordings_layout->addWidget(recordings_label);
  recordings_layout->addWidget(recordings_view_, 1);
  split->addWidget(recordings_box);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(filter_);
  layout->addWidget(split, 1);
  layout->addLayout(buttons);
  connect(filter_, &QLineEdit::textChanged, this, &RunsPanel::setFilter);
  connect(view_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPanel::onSelectionChanged);
  connect(model_, &QAbstractItemModel::modelReset, this, &RunsPanel::onSelectionChanged);
  connect(recordings_view_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &RunsPanel::onRecordingSelectionChanged);
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

std::vector<int64_t> RunsPanel::selectedRecordingIds() const {
  std::vector<int64_t> ids;
  for (const QModelIndex& i : recordings_view_->selectionModel()->selectedRows())
    ids.push_back(i.data(RecordingListModel::RecordingIdRole).toLongLong());
  return ids;
}

void RunsPanel::selectRecording(int64_t id) {
  const QModelIndex i = recordings_proxy_->mapFromSource(recordings_->recordingIndex(id));
  if (!i.isValid()) return;
  recordings_view_->selectionModel()->setCurrentIndex(i, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  recordings_view_->scrollTo(i);
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
  recordings_proxy_->setFilterFixedString(text);
  if (text.isEmpty()) return;
  // Open the sweeps that stay only because some of their runs match.
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex p = proxy_->index(r, 0);
    if (proxy_->rowCount(p) < model_->rowCount(proxy_->mapToSource(p))) view_->expand(p);
  }
}

void RunsPanel::showHeaderMenu(QTreeView* view, const QPoint& pos) {
  QMenu menu(this);
  // Every column but the id, which always shows.
  for (int c = 1; c < view->model()->columnCount(); ++c) {
    QAction* a = menu.addAction(view->model()->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    a->setCheckable(true);
    a->setChecked(!view->isColumnHidden(c));
    connect(a, &QAction::toggled, this, [view, c](bool on) { view->setColumnHidden(c, !on); });
  }
  menu.exec(view->header()->mapToGlobal(pos));
}

void RunsPanel::onSelectionChanged() {
  const auto sweeps = selectedSweepIds();
  const auto runs = selectedRunIds();
  if (!sweeps.empty() || !runs.empty()) recordings_view_->selectionModel()->clearSelection();
  delete_->setEnabled(!sweeps.empty() || !runs.empty() || !selectedRecordingIds().empty());
  compare_->setEnabled(sweeps.size() >= 2);
  if (sweeps.size() == 1 && runs.empty()) Q_EMIT sweepSelected(sweeps.front());
  if (runs.size() == 1 && sweeps.empty()) {
    const QModelIndexList rows = view_->selectionModel()->selectedRows();
    Q_EMIT runSelected(rows.front().data(SweepTreeModel::SweepIdRole).toLongLong(), runs.front());
  }
}

void RunsPanel::onRecordingSelectionChanged() {
  const auto ids = selectedRecordingIds();
  if (!ids.empty()) view_->selectionModel()->clearSelection();
  delete_->setEnabled(!ids.empty() || !selectedSweepIds().empty() || !selectedRunIds().empty());
  if (ids.size() == 1) Q_EMIT recordingSelected(ids.front());
}

void RunsPanel::deleteSelected() {
  const auto sweeps = selectedSweepIds();
  const auto recordings = selectedRecordingIds();
  std::vector<int64_t> runs;
  // A run of a sweep that is deleted as well goes with its sweep.
  for (const QModelIndex& i : view_->selectionModel()->selectedRows())
    if (i.parent().isValid() &&
        std::find(sweeps.begin(), sweeps.end(), i.data(SweepTreeModel::SweepIdRole).toLongLong()) == sweeps.end())
      runs.push_back(i.data(SweepTreeModel::RunIdRole).toLongLong());
  if (sweeps.empty() && runs.empty() && recordings.empty()) return;
  QStringList what;
  if (!sweeps.empty()) what << tr("%n sweep(s) with all their runs", "", static_cast<int>(sweeps.size()));
  if (!runs.empty()) what << tr("%n run(s)", "", static_cast<int>(runs.size()));
  if (!recordings.empty()) what << tr("%n recording(s) with all their calls", "", static_cast<int>(recordings.size()));
  if (confirm_deletes_ &&
      QMessageBox::question(this, tr("Delete from the database"),
                            tr("Delete %1 from the database? This cannot be undone.").arg(what.join(tr(" and ")))) !=
          QMessageBox::Yes)
    return;
  model_->deleteRuns(runs);
  model_->deleteSweeps(sweeps);
  recordings_->deleteRecordings(recordings);
  onSelectionChanged();
  Q_EMIT deleted();
}

}  // namespace attnscope::ui
