#pragma once
// The Runs dock: the store's sweeps, filterable and sortable; rename, tag and annotate in
// place; delete with confirmation; pick two or more to compare.

#include <vector>

#include <QWidget>

class QLineEdit;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;

namespace attnscope::ui {

class SweepListModel;

class RunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunsPanel(SweepListModel* model, QWidget* parent = nullptr);

  std::vector<int64_t> selectedSweepIds() const;
  void selectSweep(int64_t sweep_id);
  QTableView* view() const { return view_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  // Tests turn the confirmation dialog off.
  void setConfirmDeletes(bool confirm) { confirm_deletes_ = confirm; }

  void deleteSelected();

 Q_SIGNALS:
  void sweepSelected(qint64 sweep_id);
  void compareRequested(const QList<qint64>& sweep_ids);

 private:
  void onSelectionChanged();

  SweepListModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* view_;
  QLineEdit* filter_;
  QPushButton *delete_, *compare_;
  bool confirm_deletes_ = true;
};

}  // namespace attnscope::ui
