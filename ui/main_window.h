#pragma once
// The main window: Workload, Backends, Sweep and Runs docks around the chart tabs and the
// Recording tab. A sweep runs on a worker thread; finished points arrive as value snapshots and
// appear in the charts. What other processes write to the database (the CLI's sweeps, recordings
// and deletes) reaches the Runs dock through a listing on a pool thread, made whenever the
// database's files change (StoreWatcher).

#include <memory>
#include <vector>

#include <QByteArray>
#include <QMainWindow>
#include <QString>

#include "core/backend/backend_registry.h"
#include "core/store/store.h"
#include "ui/job_tracker.h"
#include "core/engine/sweep_runner.h"
#include "ui/sweep_snapshot.h"

class QAction;
class QLabel;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTimer;
class QTableView;
class QThread;

namespace attnscope::ui {

class BackendListModel;
class BackendsPanel;
class BreakdownView;
class ChartView;
class CompareView;
class MemoryView;
class RecordingListModel;
class RecordingView;
class ResultsTableModel;
class RunsPanel;
class SweepTreeModel;
class SweepPanel;
class StoreWatcher;
class SweepWorker;
class TimelineView;
class WorkloadForm;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(const QString& db_path, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens (create: or creates) a database; on failure the current one stays and the message
  // is shown (a dialog when interactive) and returned.
  QString openDatabase(const QString& path, bool create = false);
  QString databasePath() const;
  // File > Merge database...: merges each source into the open database (Store::merge) on a pool
  // thread with a connection of its own, one source after the other, the progress and then what
  // was added, skipped and refused in the status bar (and lastMessage()); the Runs dock lists the
  // result. Returns false when no database is open or a merge is already running.
  bool mergeDatabases(const QStringList& sources);
  bool isMerging() const { return merging_; }
  // Follows the sweeps submitted to Slurm (state submitted) that the Runs dock lists: one
  // pollSlurmSweep per sweep on a pool thread with a connection of its own (squeue and sacct
  // asked, the shards of ended tasks merged), then the sweeps' rows read again. Runs every
  // slurmPollInterval() ms by itself while such a sweep is listed and Slurm's commands are on PATH.
  // Returns false when nothing was started (none submitted, no Slurm, read-only, already polling).
  bool pollSlurm();
  bool isPollingSlurm() const { return polling_slurm_; }
  static constexpr int slurmPollInterval() { return 5000; }
  // The window's size on a first start (no saved geometry) on a screen with `available` room.
  static QSize firstStartSize(QSize available);
  // Help > Keyboard shortcuts (F1): every menu action's key, the tabs' and the Timeline's.
  QString shortcutsHelp() const;
  Store* store() const { return store_.get(); }

  bool startSweep();
  void cancelSweep();
  bool isRunning() const { return running_; }
  void showSweeps(const std::vector<int64_t>& ids);
  const SweepSnapshots& shownSweeps() const { return shown_; }

  // Tests and headless use: errors go to lastMessage() and the status bar, never a dialog.
  void setInteractive(bool interactive) { interactive_ = interactive; }
  QString lastMessage() const { return last_message_; }

  WorkloadForm* workloadForm() const { return workload_; }
  SweepPanel* sweepPanel() const { return sweep_panel_; }
  BackendListModel* backendModel() const { return backend_model_; }
  RunsPanel* runsPanel() const { return runs_panel_; }
  SweepTreeModel* sweepTreeModel() const { return sweep_model_; }
  RecordingListModel* recordingListModel() const { return recording_model_; }
  RecordingView* recordingView() const { return recording_view_; }
  // Opens a recording in the Recording tab.
  void showRecording(qint64 recording_id);
  MemoryView* memoryView() const { return memory_view_; }
  QTabWidget* tabs() const { return tabs_; }
  const std::vector<ChartView*>& chartViews() const { return charts_; }
  QAction* runAction() const { return run_action_; }
  QAction* cancelAction() const { return cancel_action_; }
  QLabel* progressLabel() const { return current_label_; }

 Q_SIGNALS:
  void sweepFinished(qint64 sweep_id, const QString& state);
  void pointShown(qint64 run_id);

 protected:
  void closeEvent(QCloseEvent* event) override;
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildDocks();
  void buildMenus();
  void updateRunnable();
  void setShown(SweepSnapshots sweeps);
  void report(const QString& message);
  void restoreSettings();
  void saveSettings();
  void exportChart();
  void exportData(const QString& format);
  void exportTrace();
  void exportReport();
  void showAbout();
  void compare(const QList<qint64>& ids);
  void showRun(qint64 sweep_id, qint64 run_id);
  void refreshShown();
  // Lists the database's sweeps and recordings on a pool thread, for the Runs dock (see
  // main_window_recordings.cpp).
  void listStore();
  // "Sweep this call" of the Recording tab.
  void sweepCall(const WorkloadSpec& spec, const QString& ref);
  // Back from the Recording tab to the chart that was shown, when a sweep or run is picked.
  void leaveRecordingTab();

  void onSweepStarted(quint64 job, qint64 sweep_id, const QString& name);
  void onProgress(quint64 job, const SweepProgress& p);
  void onPoint(quint64 job, qint64 sweep_id, const RunResult& run);
  void onFinished(quint64 job, qint64 sweep_id, const QString& state, const QString& error);

  BackendRegistry& registry_;  // builtinSession()'s, GUI thread: support() and plan() for the docks
  std::unique_ptr<Store> store_;
  WorkloadForm* workload_ = nullptr;
  SweepPanel* sweep_panel_ = nullptr;
  BackendListModel* backend_model_ = nullptr;
  BackendsPanel* backends_panel_ = nullptr;
  SweepTreeModel* sweep_model_ = nullptr;
  RunsPanel* runs_panel_ = nullptr;
  RecordingListModel* recording_model_ = nullptr;
  StoreWatcher* watcher_ = nullptr;
  JobTracker list_jobs_;           // the latest listing counts; one of an older database is dropped
  bool list_after_sweep_ = false;  // the database changed while our sweep ran
  QByteArray default_state_;       // the docks as built, for View > Reset layout
  bool merging_ = false;
  bool polling_slurm_ = false;
  bool slurm_missing_told_ = false;  // "Slurm's commands are not on PATH" shown once per database
  QTimer* slurm_timer_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  RecordingView* recording_view_ = nullptr;
  QWidget* tab_before_recording_ = nullptr;  // the tab shown when a recording was opened
  MemoryView* memory_view_ = nullptr;
  TimelineView* timeline_view_ = nullptr;
  BreakdownView* breakdown_view_ = nullptr;
  CompareView* compare_view_ = nullptr;
  std::vector<ChartView*> charts_;
  ResultsTableModel* results_model_ = nullptr;
  QTableView* results_view_ = nullptr;
  QAction *run_action_ = nullptr, *cancel_action_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel *current_label_ = nullptr, *eta_label_ = nullptr;
  QPushButton* cancel_button_ = nullptr;

  QThread* thread_ = nullptr;
  SweepWorker* worker_ = nullptr;
  JobTracker sweep_jobs_;  // the sweep whose worker signals count; older ones are dropped
  bool running_ = false;
  int64_t running_sweep_ = 0;
  SweepSnapshots shown_;
  void showPendingPoints();
  std::vector<RunResult> pending_runs_;  // finished, not yet in shown_ (see onPoint)
  qint64 pending_sweep_ = 0;
  QTimer* point_timer_ = nullptr;
  bool interactive_ = true;
  QString last_message_;
};

}  // namespace attnscope::ui
