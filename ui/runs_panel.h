#pragma once
// The Runs dock: the store's sweeps with their runs as children, filterable and sortable;
// rename, tag and annotate sweeps in place; delete sweeps or runs with confirmation; pick two
// or more sweeps to compare. Selecting one sweep shows it; selecting one run shows its sweep
// and that run. Under the sweeps, the recordings (`attnscope record`), filtered by the same
// text: selecting one opens it in the Recording tab; deleted and renamed as sweeps are. A
// selection is in one list at a time, so Delete acts on what is seen selected.

#include <vector>

#include <QWidget>

class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTreeView;

namespace attnscope::ui {

class RecordingListModel;
class SweepTreeFilter;
class SweepTreeModel;

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  RunsPanel(SweepTreeModel* model, RecordingListModel* recordings, QWidget* parent = nullptr);

  std::vector<int64_t> selectedSweepIds() const;
  std::vector<int64_t> selectedRunIds() const;
  std::vector<int64_t> selectedRecordingIds() const;
  void selectRecording(int64_t id);
  void selectSweep(int64_t sweep_id);
  // Expands the run's sweep and selects the run.
  void selectRun(int64_t sweep_id, int64_t run_id);
  // Shows the sweep's runs.
  void expandSweep(int64_t sweep_id);
  // The first sweep in the dock's order (newest first unless sorted otherwise).
  void selectFirstSweep();
  QTreeView* view() const { return view_; }
  QTreeView* recordingsView() const { return recordings_view_; }
  SweepTreeFilter* proxy() const { return proxy_; }
  QLineEdit* filterEdit() const { return filter_; }
  // Tests turn the confirmation dialog off.
  void setConfirmDeletes(bool confirm) { confirm_deletes_ = confirm; }

  void deleteSelected();
  QSize sizeHint() const override;

 Q_SIGNALS:
  void sweepSelected(qint64 sweep_id);
  void runSelected(qint64 sweep_id, qint64 run_id);
  void recordingSelected(qint64 recording_id);
  void compareRequested(const QList<qint64>& sweep_ids);
  void deleted();

 private:
  void onSelectionChanged();
  void setFilter(const QString& text);
  void onRecordingSelectionChanged();
  void showHeaderMenu(QTreeView* view, const QPoint& pos);
  void select(const QModelIndex& source);

  SweepTreeModel* model_;
  SweepTreeFilter* proxy_;
  QTreeView* view_;
  RecordingListModel* recordings_;
  QSortFilterProxyModel* recordings_proxy_;
  QTreeView* recordings_view_;
  QLineEdit* filter_;
  QPushButton *delete_, *compare_;
  bool confirm_deletes_ = true;
};

}  // namespace attnscope::ui
