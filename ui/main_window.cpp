#include "ui/main_window.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileInfo>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScreen>
#include <QPointer>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QThread>
#include <QTimer>

#include <nlohmann/json.hpp>

#include "kernels/builtin_session.h"
#include "ui/backend_list_model.h"
#include "ui/backends_panel.h"
#include "ui/breakdown_view.h"
#include "ui/chart_view.h"
#include "ui/dispatch_view.h"
#include "ui/frontier_view.h"
#include "ui/memory_view.h"
#include "ui/recording_list_model.h"
#include "ui/recording_view.h"
#include "ui/results_table_model.h"
#include "ui/runs_panel.h"
#include "ui/store_watcher.h"
#include "ui/sweep_tree_model.h"
#include "ui/sweep_panel.h"
#include "ui/sweep_worker.h"
#include "ui/timeline_view.h"
#include "ui/view_factory.h"
#include "ui/workload_form.h"

namespace attnscope::ui {

namespace {

QDockWidget* dock(QMainWindow* w, const QString& title, const char* name, QWidget* content, bool scroll) {
  auto* d = new QDockWidget(title, w);
  d->setObjectName(name);
  if (scroll) {
    auto* area = new QScrollArea(d);
    area->setWidgetResizable(true);
    area->setWidget(content);
    area->setFrameShape(QFrame::NoFrame);
    d->setWidget(area);
  } else {
    d->setWidget(content);
  }
  return d;
}

}  // namespace

MainWindow::MainWindow(const QString& db_path, QWidget* parent)
    : QMainWindow(parent), registry_(builtinSession().registry()) {
  registerUiMetaTypes();
  // Backends that check their availability slowly (the torch backends import torch in the
  // user's Python) do it in the background, never on this thread; the Backends dock is re-checked
  // when an answer arrives. (Registering them checks nothing.)
  builtinBackendSettings().setBackgroundChecks(true);
  builtinBackendSettings().setGuiPython(QSettings().value("torch/python").toString().toStdString());
  setWindowTitle(tr("AttnScope"));
  setAcceptDrops(true);
  setDockOptions(AnimatedDocks | AllowTabbedDocks);

  tabs_ = new QTabWidget(this);
  tabs_->setObjectName("chartTabs");
  memory_view_ = new MemoryView(tabs_);
  charts_.push_back(memory_view_);
  for (ChartView* v : makeExtraChartViews(tabs_)) charts_.push_back(v);
  for (ChartView* v : charts_) {
    tabs_->addTab(v, v->title());
    if (auto* t = qobject_cast<TimelineView*>(v)) {
      timeline_view_ = t;
      t->setBackgroundLoading(true);  // its event source is set per database in openDatabase
    }
    if (auto* b = qobject_cast<BreakdownView*>(v)) {
      breakdown_view_ = b;
      b->setBackgroundLoading(true);  // phase summaries from the traces, likewise
    }
  }
  results_model_ = new ResultsTableModel(this);
  results_view_ = new QTableView(tabs_);
  results_view_->setObjectName("resultsView");
  results_view_->setModel(results_model_);
  results_view_->horizontalHeader()->setStretchLastSection(true);
  results_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  tabs_->addTab(results_view_, tr("Results"));
  recording_view_ = makeRecordingView(tabs_);
  recording_view_->setBackgroundLoading(true);  // its source is set per database in openDatabase
  tabs_->addTab(recording_view_, recording_view_->title());
  connect(recording_view_, &RecordingView::sweepRequested, this, &MainWindow::sweepCall);
  setCentralWidget(tabs_);
  // A run picked anywhere (a point in Memory or Time, a heatmap cell, a Results row, Breakdown's
  // or Timeline's chooser) is shown in every per-run view and selected in Results.
  results_view_->horizontalHeader()->setSectionResizeMode(ResultsTableModel::SpecColumn, QHeaderView::ResizeToContents);
  connect(results_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& i) {
            if (const RunResult* r = results_model_->run(i.row())) Q_EMIT pointShown(r->id);
          });
  for (ChartView* v : charts_) {
    connect(this, &MainWindow::pointShown, v, &ChartView::selectRun);
    connect(v, &ChartView::runPicked, this, &MainWindow::pointShown);
  }
  connect(this, &MainWindow::pointShown, this, [this](qint64 run_id) {
    const int row = results_model_->rowOf(run_id);
    if (row >= 0 && results_view_->currentIndex().row() != row)
      results_view_->setCurrentIndex(results_model_->index(row, ResultsTableModel::RunColumn));
    if (row >= 0) {
      const RunResult* r = results_model_->run(row);
      statusBar()->showMessage(tr("R%1 (%2, %3) shown in Breakdown and Timeline")
                                   .arg(run_id)
                                   .arg(QString::fromStdString(r->backend), QString::fromStdString(summary(r->spec))),
                               8000);
    }
  });

  buildDocks();
  buildMenus();

  progress_ = new QProgressBar(this);
  progress_->setMaximumWidth(220);
  progress_->setVisible(false);
  current_label_ = new QLabel(this);
  current_label_->setObjectName("currentPoint");
  eta_label_ = new QLabel(this);
  cancel_button_ = new QPushButton(tr("Cancel"), this);
  cancel_button_->setVisible(false);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancelSweep);
  statusBar()->addWidget(current_label_, 1);
  statusBar()->addPermanentWidget(eta_label_);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_button_);

  point_timer_ = new QTimer(this);
  point_timer_->setSingleShot(true);
  connect(point_timer_, &QTimer::timeout, this, &MainWindow::showPendingPoints);
  watcher_ = new StoreWatcher(this);
  connect(watcher_, &StoreWatcher::changed, this, &MainWindow::listStore);
  slurm_timer_ = new QTimer(this);
  slurm_timer_->setInterval(slurmPollInterval());
  connect(slurm_timer_, &QTimer::timeout, this, [this] { pollSlurm(); });
  slurm_timer_->start();

  thread_ = new QThread(this);
  thread_->setObjectName("attnscope-sweep");
  worker_ = new SweepWorker;
  worker_->moveToThread(thread_);
  connect(thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &SweepWorker::sweepStarted, this, &MainWindow::onSweepStarted);
  connect(worker_, &SweepWorker::progressed, this, &MainWindow::onProgress);
  connect(worker_, &SweepWorker::pointFinished, this, &MainWindow::onPoint);
  connect(worker_, &SweepWorker::finished, this, &MainWindow::onFinished);
  thread_->start();

  QPointer<MainWindow> self(this);
  builtinBackendSettings().setAvailabilityListener([self] {
    if (QCoreApplication* app = QCoreApplication::instance())
      QMetaObject::invokeMethod(app, [self] { if (self) self->updateRunnable(); }, Qt::QueuedConnection);
  });

  default_state_ = saveState();
  restoreSettings();
  if (!db_path.isEmpty()) openDatabase(db_path, true);
  updateRunnable();
}

MainWindow::~MainWindow() {
  worker_->cancel();
  thread_->quit();
  thread_->wait();
}

void MainWindow::buildDocks() {
  workload_ = new WorkloadForm;
  backend_model_ = new BackendListModel(registry_, this);
  QStringList notes;
  for (const auto& n : builtinSession().notes()) notes << QString::fromStdString(n);
  backends_panel_ = new BackendsPanel(backend_model_, notes);
  sweep_panel_ = new SweepPanel;
  sweep_model_ = new SweepTreeModel(this);
  recording_model_ = new RecordingListModel(this);
  runs_panel_ = new RunsPanel(sweep_model_, recording_model_);
  auto* wd = dock(this, tr("Workload"), "workloadDock", workload_, true);
  // Scrolled too: the reasons listed under the backends can run long, and unscrolled they would
  // claim the height the Workload form needs to show every field down to seed.
  auto* bd = dock(this, tr("Backends"), "backendsDock", backends_panel_, true);
  auto* sd = dock(this, tr("Sweep"), "sweepDock", sweep_panel_, true);
  auto* rd = dock(this, tr("Runs"), "runsDock", runs_panel_, false);
  addDockWidget(Qt::LeftDockWidgetArea, wd);
  addDockWidget(Qt::LeftDockWidgetArea, bd);
  addDockWidget(Qt::RightDockWidgetArea, sd);
  addDockWidget(Qt::RightDockWidgetArea, rd);
  // The form gets the height it asks for (a saved layout, restored later, wins).
  resizeDocks({wd, bd}, {workload_->sizeHint().height() + 8, 160}, Qt::Vertical);
  // The right docks start wide enough for a sweep's name and a run's point (they may shrink to
  // their minimum when the screen is small, and their hints never set the window's width).
  resizeDocks({sd, rd}, {330, 330}, Qt::Horizontal);
  // The Sweep dock the height of its form and its point count; the Runs dock the rest.
  resizeDocks({sd, rd}, {sweep_panel_->sizeHint().height() + 8, 300}, Qt::Vertical);
  // ...and never less width than its widest row (the scroll area alone would let the dock shrink
  // until the labels are cut).
  wd->widget()->setMinimumWidth(workload_->minimumSizeHint().width() + 4);
  connect(workload_, &WorkloadForm::specChanged, this, &MainWindow::updateRunnable);
  connect(sweep_panel_, &SweepPanel::changed, this, &MainWindow::updateRunnable);
  connect(backend_model_, &BackendListModel::checkedChanged, this, &MainWindow::updateRunnable);
  connect(runs_panel_, &RunsPanel::sweepSelected, this, [this](qint64 id) {
    leaveRecordingTab();
    showSweeps({id});
  });
  connect(runs_panel_, &RunsPanel::runSelected, this, [this](qint64 sweep_id, qint64 run_id) {
    leaveRecordingTab();
    showRun(sweep_id, run_id);
  });
  connect(runs_panel_, &RunsPanel::recordingSelected, this, &MainWindow::showRecording);
  connect(runs_panel_, &RunsPanel::compareRequested, this, &MainWindow::compare);
  connect(runs_panel_, &RunsPanel::deleted, this, &MainWindow::refreshShown);
  connect(sweep_model_, &SweepTreeModel::storeError, this, &MainWindow::report);
  connect(recording_model_, &RecordingListModel::storeError, this, &MainWindow::report);
  // A recording deleted, here or elsewhere, is no longer shown in the Recording tab.
  connect(recording_model_, &QAbstractItemModel::rowsRemoved, this, [this] {
    const int64_t shown = recording_view_->recordingId();
    if (shown > 0 && !recording_model_->recordingIndex(shown).isValid()) recording_view_->showRecording(0);
  });
}

void MainWindow::updateRunnable() {
  const WorkloadSpec spec = workload_->spec();
  backend_model_->setSpec(spec);
  sweep_panel_->update(spec, backend_model_->checkedBackends(), !workload_->errors().empty());
  for (ChartView* v : charts_)  // the Dispatch view predicts torch's kernel for the sweep being set up
    if (auto* d = qobject_cast<DispatchView*>(v)) d->setPlannedSweep(sweep_panel_->sweep());
    else if (auto* f = qobject_cast<FrontierView*>(v)) f->setPlannedSweep(sweep_panel_->sweep());
  workload_->setSwept(sweep_panel_->sweep().axes);
  const auto errors = workload_->errors();
  const bool ok = errors.empty() && sweep_panel_->valid() && store_ && !running_;
  run_action_->setEnabled(ok);
  QString why;
  if (!errors.empty()) why = QString::fromStdString(describe(errors));
  else if (!sweep_panel_->valid()) why = sweep_panel_->problem();
  else if (!store_) why = tr("no database open");
  run_action_->setToolTip(ok ? tr("Run the sweep (Ctrl+R)") : tr("Cannot run: %1").arg(why));
}

QString MainWindow::databasePath() const { return store_ ? QString::fromStdString(store_->path()) : QString(); }

QString MainWindow::openDatabase(const QString& path, bool create) {
  if (running_) {
    report(tr("A sweep is running; cancel it or wait before opening another database."));
    return last_message_;
  }
  QString note;
  try {
    std::unique_ptr<Store> s;
    try {
      s = std::make_unique<Store>(path.toStdString(), create ? StoreMode::create : StoreMode::existing);
    } catch (const StoreError& e) {
      // A database we may not write is still worth reading: open it read-only and say so.
      if (e.kind() != StoreError::Kind::read_only) throw;
      s = std::make_unique<Store>(path.toStdString(), StoreMode::read);
      note = tr(" (read-only: %1)").arg(QString::fromStdString(e.what()));
    }
    store_ = std::move(s);
  } catch (const std::exception& e) {
    report(tr("Cannot open %1: %2").arg(path, QString::fromStdString(e.what())));
    return last_message_;
  }
  sweep_model_->setStore(store_.get());
  recording_model_->setStore(store_.get());  // filled by the listing below
  // Traces load on a pool thread (TimelineView), through a connection of their own: a Store is
  // used by one thread at a time.
  if (timeline_view_)
    timeline_view_->setEventSource([db = path.toStdString()](int64_t run_id) { return Store(db, StoreMode::read).events(run_id); });
  if (breakdown_view_)
    breakdown_view_->setEventSource([db = path.toStdString()](int64_t run_id) { return Store(db, StoreMode::read).events(run_id); });
  recording_view_->setRecordingSource([db = path.toStdString()](int64_t id) { return Store(db, StoreMode::read).recording(id); });
  watcher_->setDatabase(path);
  slurm_missing_told_ = false;
  list_jobs_.invalidate();  // a listing of the previous database may be on its way
  listStore();
  setShown({});
  setWindowTitle(tr("AttnScope - %1").arg(QFileInfo(path).fileName()));
  statusBar()->showMessage(tr("Opened %1%2").arg(path, note), note.isEmpty() ? 5000 : 0);
  QSettings().setValue("db/path", path);
  updateRunnable();
  runs_panel_->selectFirstSweep();
  return {};
}

void MainWindow::report(const QString& message) {
  last_message_ = message;
  statusBar()->showMessage(message, 10000);
  if (interactive_) QMessageBox::warning(this, tr("AttnScope"), message);
}

bool MainWindow::startSweep() {
  updateRunnable();
  if (!run_action_->isEnabled()) return false;
  running_ = true;
  worker_->resetCancel();
  const quint64 job = sweep_jobs_.startJob();
  const QString db = databasePath();
  const SweepSpec spec = sweep_panel_->sweep();
  QMetaObject::invokeMethod(worker_, [w = worker_, job, db, spec] { w->run(job, db, spec); }, Qt::QueuedConnection);
  progress_->setRange(0, static_cast<int>(spec.pointCount()));
  progress_->setValue(0);
  progress_->setVisible(true);
  cancel_button_->setVisible(true);
  cancel_action_->setEnabled(true);
  current_label_->setText(tr("starting..."));
  updateRunnable();
  QSettings().setValue("spec/last", QString::fromStdString(toJson(spec).dump()));
  return true;
}

void MainWindow::cancelSweep() {
  if (!running_) return;
  worker_->cancel();
  current_label_->setText(tr("cancelling..."));
}

void MainWindow::onSweepStarted(quint64 job, qint64 sweep_id, const QString&) {
  if (!sweep_jobs_.isCurrent(job)) return;
  running_sweep_ = sweep_id;
  sweep_model_->refreshSweep(sweep_id);
  runs_panel_->selectSweep(sweep_id);  // shows it (empty) in the charts
  if (shown_.size() != 1 || shown_.front()->info.id != sweep_id) showSweeps({sweep_id});
}

void MainWindow::onProgress(quint64 job, const SweepProgress& p) {
  if (!sweep_jobs_.isCurrent(job)) return;
  progress_->setRange(0, static_cast<int>(p.total));
  progress_->setValue(static_cast<int>(p.done));
  current_label_->setText(p.current.empty() ? QString()
                                            : tr("%1/%2: %3").arg(p.done + 1).arg(p.total).arg(QString::fromStdString(p.current)));
  eta_label_->setText(p.eta_s < 0 ? QString() : tr("ETA %1 s").arg(p.eta_s, 0, 'f', p.eta_s < 10 ? 1 : 0));
}

void MainWindow::onPoint(quint64 job, qint64 sweep_id, const RunResult& run) {
  if (!sweep_jobs_.isCurrent(job)) return;
  // Points finishing within a moment reach the Runs dock and the charts together: one snapshot
  // copy and one redraw per batch instead of per point (a sweep is not copied n times).
  if (pending_sweep_ != sweep_id) showPendingPoints();
  pending_runs_.push_back(run);
  pending_sweep_ = sweep_id;
  if (!point_timer_->isActive()) {
    // The wait grows with the runs shown (a quarter of a millisecond per run, 150 ms to 2 s):
    // each batch then adds a share of what is shown, so the copies of a sweep of n fast points
    // add up to O(n), like a growing vector's, and the redraws stay few.
    const size_t shown = shown_.size() == 1 ? shown_.front()->runs.size() : 0;
    point_timer_->setInterval(static_cast<int>(std::clamp<size_t>(shown / 4, 150, 2000)));
    point_timer_->start();
  }
}

void MainWindow::showPendingPoints() {
  std::vector<RunResult> runs = std::move(pending_runs_);
  pending_runs_.clear();
  for (const RunResult& r : runs) sweep_model_->addRun(pending_sweep_, r);
  if (runs.empty() || shown_.size() != 1 || shown_.front()->info.id != pending_sweep_) return;
  setShown({withRuns(shown_.front(), std::move(runs))});
}

void MainWindow::onFinished(quint64 job, qint64 sweep_id, const QString& state, const QString& error) {
  if (!sweep_jobs_.isCurrent(job)) return;
  point_timer_->stop();
  showPendingPoints();
  running_ = false;
  progress_->setVisible(false);
  cancel_button_->setVisible(false);
  cancel_action_->setEnabled(false);
  eta_label_->clear();
  current_label_->setText(error.isEmpty() ? tr("Sweep %1 %2").arg(sweep_id).arg(state) : QString());
  if (!error.isEmpty()) report(tr("The sweep failed: %1").arg(error));
  if (sweep_id > 0) {
    sweep_model_->refreshSweep(sweep_id);
    runs_panel_->selectSweep(sweep_id);
    showSweeps({sweep_id});
  }
  updateRunnable();
  if (list_after_sweep_) listStore();
  Q_EMIT sweepFinished(sweep_id, state);
}

void MainWindow::showSweeps(const std::vector<int64_t>& ids) {
  if (!store_) return;
  SweepSnapshots snaps;
  try {
    for (int64_t id : ids)
      if (auto s = loadSweepSnapshot(*store_, id)) snaps.push_back(std::move(s));
  } catch (const std::exception& e) {
    report(tr("Cannot read the sweep: %1").arg(QString::fromStdString(e.what())));
    return;
  }
  setShown(std::move(snaps));
}

void MainWindow::showRun(qint64 sweep_id, qint64 run_id) {
  if (shown_.size() != 1 || shown_.front()->info.id != sweep_id) showSweeps({sweep_id});
  Q_EMIT pointShown(run_id);
}

void MainWindow::refreshShown() {
  std::vector<int64_t> ids;
  for (const auto& s : shown_) ids.push_back(s->info.id);
  showSweeps(ids);
}

void MainWindow::setShown(SweepSnapshots sweeps) {
  shown_ = std::move(sweeps);
  for (ChartView* v : charts_) v->setSweeps(shown_);
  results_model_->setSweeps(shown_);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (running_) {
    worker_->cancel();
    sweep_jobs_.invalidate();  // whatever the worker still sends is stale now
  }
  saveSettings();
  QMainWindow::closeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (urls.size() == 1 && urls.front().isLocalFile()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const auto urls = event->mimeData()->urls();
  if (urls.size() != 1 || !urls.front().isLocalFile()) return;
  event->acceptProposedAction();
  openDatabase(urls.front().toLocalFile(), false);
}

QSize MainWindow::firstStartSize(QSize available) {
  // A laptop's screen (under 1600 px) is all needed: at 90 % of 1280 x 800 the central charts'
  // minimum squeezed the Sweep dock until its fields were cut. A larger screen keeps a margin.
  if (available.width() < 1600 || available.height() < 1000) return available;
  return {available.width() * 9 / 10, available.height() * 9 / 10};
}

void MainWindow::restoreSettings() {
  QSettings s;
  const bool restored = restoreGeometry(s.value("window/geometry").toByteArray());
  if (const QScreen* screen = QGuiApplication::primaryScreen(); restored && screen) {
    // Saved on a larger screen (or widened by a view since): never wider or taller than this one.
    const QRect avail = screen->availableGeometry();
    if (width() > avail.width() || height() > avail.height()) {
      resize(std::min(width(), avail.width()), std::min(height(), avail.height()));
      move(avail.topLeft());
    }
  }
  if (!restored) {
    // First start: most of the screen, so both memory plots and the docks have room.
    if (const QScreen* screen = QGuiApplication::primaryScreen()) {
      const QRect avail = screen->availableGeometry();
      resize(firstStartSize(avail.size()));
      move(avail.center() - rect().center());
    }
  }
  restoreState(s.value("window/state").toByteArray());
  const QString last = s.value("spec/last").toString();
  if (!last.isEmpty()) {
    try {
      SweepSpec spec = sweepSpecFromJson(nlohmann::json::parse(last.toStdString()));
      spec.name.clear();  // a name is for one sweep: a restart suggests a fresh one, never a duplicate
      workload_->setSpec(spec.base);
      sweep_panel_->setSweep(spec);
      backend_model_->setCheckedIds(spec.backends);
    } catch (const std::exception&) {
      // A spec from an older version that no longer parses: keep the defaults.
    }
  }
}

void MainWindow::saveSettings() {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("spec/last", QString::fromStdString(toJson(sweep_panel_->sweep()).dump()));
  if (store_) s.setValue("db/path", databasePath());
}

}  // namespace attnscope::ui
