// MainWindow and the database's other writers: the listing that brings the CLI's sweeps,
// recordings and deletes into the Runs dock; the Slurm tasks of submitted sweeps, followed in the
// background; and the Recording tab (open a recording, sweep one of its calls).

#include <algorithm>
#include <memory>

#include <QCoreApplication>
#include <QDockWidget>
#include <QPointer>
#include <QStatusBar>
#include <QTabWidget>
#include <QThreadPool>

#include "core/cluster/slurm.h"
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
      // A shown sweep that another writer added runs to (the CLI's sweep into it, a merge, a
      // Slurm task's shard) is read again, so the charts show what the dock counts.
      bool shown_changed = false;
      for (const auto& shown : self->shown_)
        for (const auto& listed : listing->sweeps)
          if (listed.id == shown->info.id &&
              (listed.run_count != static_cast<int64_t>(shown->runs.size()) || listed.state != shown->info.state))
            shown_changed = true;
      self->sweep_model_->updateSweeps(std::move(listing->sweeps));
      self->recording_model_->setRecordings(std::move(listing->recordings));
      if (shown_changed) self->refreshShown();
    }, Qt::QueuedConnection);
  });
}

bool MainWindow::pollSlurm() {
  if (!store_ || polling_slurm_ || store_->readOnly()) return false;
  std::vector<int64_t> ids = sweep_model_->sweepIdsInState("submitted");
  if (ids.empty()) return false;
  if (!slurmOnPath()) {
    if (!slurm_missing_told_)
      statusBar()->showMessage(tr("Slurm's commands (squeue, sacct) are not on PATH here: submitted sweeps show their tasks' "
                                  "states as last seen; `attnscope slurm status S<n>` where jobs are submitted follows them"),
                               15000);
    slurm_missing_told_ = true;
    return false;
  }
  polling_slurm_ = true;
  struct Outcome {
    QStringList lines, refused;
    bool merged = false;  // a shard was merged: the charts of a shown sweep are read again
  };
  QPointer<MainWindow> self(this);
  QThreadPool::globalInstance()->start([self, db = databasePath().toStdString(), ids] {
    auto outcome = std::make_shared<Outcome>();
    try {
      Store store(db, StoreMode::existing);
      for (int64_t id : ids) {
        const SlurmPoll poll = pollSlurmSweep(store, id);
        QStringList states;
        for (const auto& [state, n] : poll.counts) states << QStringLiteral("%1 %2").arg(n).arg(QString::fromStdString(state));
        outcome->merged = outcome->merged || poll.merged_now > 0;
        if (poll.merged_now)
          outcome->lines << tr("S%1: %2/%3 points merged; tasks: %4").arg(id).arg(poll.present).arg(poll.total).arg(states.join(", "));
        for (const auto& r : poll.refused) outcome->refused << tr("S%1 task %2").arg(id).arg(QString::fromStdString(r));
      }
    } catch (const std::exception& e) {
      outcome->refused << tr("following the Slurm tasks failed: %1").arg(QString::fromStdString(e.what()));
    }
    QMetaObject::invokeMethod(qApp, [self, db, ids, outcome] {
      if (!self) return;
      self->polling_slurm_ = false;
      if (self->databasePath().toStdString() != db) return;  // another database by now
      for (int64_t id : ids) self->sweep_model_->refreshSweep(id);  // states, counts (a merge may have finished it)
      if (outcome->merged) {
        bool shown = false;
        for (const auto& s : self->shown_) shown = shown || std::find(ids.begin(), ids.end(), s->info.id) != ids.end();
        if (shown) self->refreshShown();
      }
      // In the status bar: nobody asked for this, and the next poll tries again.
      if (!outcome->refused.isEmpty()) self->statusBar()->showMessage(outcome->refused.join("; "), 15000);
      else if (!outcome->lines.isEmpty()) self->statusBar()->showMessage(outcome->lines.join("; "), 10000);
    }, Qt::QueuedConnection);
  });
  return true;
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
