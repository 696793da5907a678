// MainWindow and the database's other writers: the listing that brings the CLI's sweeps,
// recordings and deletes into the Runs dock; and the Recording tab (open a recording, sweep one
// of its calls).

#include <memory>

#include <QCoreApplication>
#include <QDockWidget>
#include <QPointer>
#include <QStatusBar>
#include <QTabWidget>
#include <QThreadPool>

#include "ui/main_window.h"
#include "ui/recording_list_model.h"
#include "ui/recording_view.h"
#include "ui/sweep_panel.h"
#include "ui/sweep_tree_model.h"
#include "ui/workload_form.h"

namespace attnscope::ui {

void MainWindow::listStore() {
  if (!store_) return;
  // The dock follows our own sweep point by point; a listing meanwhile would race it for nothing
  // (what the CLI did is listed once the sweep ends).
  if (running_) {
    list_after_sweep_ = true;
    return;
  }
  list_after_sweep_ = false;
  const quint64 job = list_jobs_.startJob();
  const quint64 changes = sweep_model_->localChanges() + recording_model_->localChanges();
  struct Listing {
    std::vector<SweepInfo> sweeps;
    std::vector<Recording> recordings;
    QString error;
  };
  QPointer<MainWindow> self(this);
  // A connection of its own on a pool thread, as the trace loaders have: a Store is used by one
  // thread at a time, and reading every sweep's counts is not for the GUI thread.
  QThreadPool::globalInstance()->start([self, db = databasePath().toStdString(), job, changes] {
    auto listing = std::make_shared<Listing>();
    try {
      Store store(db, StoreMode::read);
      listing->sweeps = store.sweeps();
      listing->recordings = store.recordings();
    } catch (const std::exception& e) {
      listing->error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(qApp, [self, job, changes, listing] {
      if (!self || !self->list_jobs_.isCurrent(job)) return;  // gone, or another database by now
      // In the status bar, not a dialog: nobody asked for this listing, and the next change retries.
      if (!listing->error.isEmpty()) return self->statusBar()->showMessage(tr("Cannot list the database: %1").arg(listing->error), 10000);
      // Changed here since the listing began (a delete, a rename, our sweep): it may hold what is
      // no longer so. List again rather than undo that.
      if (self->running_ || changes != self->sweep_model_->localChanges() + self->recording_model_->localChanges())
        return self->listStore();
      self->sweep_model_->updateSweeps(std::move(listing->sweeps));
      self->recording_model_->setRecordings(std::move(listing->recordings));
    }, Qt::QueuedConnection);
  });
}

void MainWindow::showRecording(qint64 recording_id) {
  if (tabs_->currentWidget() != recording_view_) tab_before_recording_ = tabs_->currentWidget();
  recording_view_->showRecording(recording_id);
  tabs_->setCurrentWidget(recording_view_);
}

void MainWindow::leaveRecordingTab() {
  if (tabs_->currentWidget() == recording_view_ && tab_before_recording_) tabs_->setCurrentWidget(tab_before_recording_);
}

void MainWindow::sweepCall(const WorkloadSpec& spec, const QString& ref) {
  workload_->setSpec(spec);
  // The sweep starts as the call itself, as `sweep --from REC:ROW` does before any list is given;
  // the lists are the user's to fill ("what if 32 heads").
  for (const char* list : {"heads", "seq", "other"}) sweep_panel_->setAxisText(list, QString());
  sweep_panel_->setAxisText("name", tr("from %1").arg(ref));
  if (auto* d = findChild<QDockWidget*>("workloadDock")) {
    d->show();
    d->raise();
  }
  statusBar()->showMessage(tr("%1 is in the Workload form: give the Sweep dock's lists values (heads 16, 32) and run")
                               .arg(ref), 10000);
}

}  // namespace attnscope::ui
