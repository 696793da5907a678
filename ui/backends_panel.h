#pragma once
// The Backends dock: the checklist of backends and a detail line with the current backend's
// description and the reasons it cannot run the spec (or is unavailable here).

#include <QWidget>

class QLabel;
class QListView;

namespace attnscope::ui {

class BackendListModel;

class BackendsPanel : public QWidget {
  Q_OBJECT
 public:
  BackendsPanel(BackendListModel* model, const QStringList& notes, QWidget* parent = nullptr);
  QListView* view() const { return view_; }
  QLabel* detail() const { return detail_; }

 private:
  void updateDetail();
  BackendListModel* model_;
  QListView* view_;
  QLabel* detail_;
};

}  // namespace attnscope::ui
