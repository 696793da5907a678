// Renders the main views offscreen into PNGs for the README and the user guide: builds a sample database with the
// real CPU backends, opens the main window on it and grabs each tab.
// Usage: attnscope_screenshots OUT_DIR  (or OUT_DIR --stack DB: only the stack pictures, from DB; or
// OUT_DIR --tp DB: a tensor-parallel run R1's Breakdown and Timeline)

#include <QAction>
#include <QComboBox>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QMenuBar>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <cstdint>
#include <cstdio>

#include <qcustomplot.h>

#include "core/engine/recorded_sweep.h"
#include "core/store/store.h"
#include "kernels/builtin_backends.h"
#include "ui/breakdown_view.h"
#include "ui/chart_view.h"
#include "ui/compare_view.h"
#include "ui/gui_entry.h"
#include "ui/frontier_view.h"
#include "ui/main_window.h"
#include "ui/runs_panel.h"
#include "ui/timeline_lanes.h"
#include "ui/timeline_view.h"

using namespace attnscope;

namespace {

int64_t runSweep(Store& store, BackendRegistry& registry, const std::string& name, const std::string& mask) {
  SweepSpec s;
  s.name = name;
  s.base.width = 64;  // the classic report: model width fixed, head_dim = 64 / heads
  setField(s.base, "mask", mask);
  setField(s.base, "mask_layout", "per_head");
  s.axes = {{"heads", {"1", "2", "4", "8", "16"}}, {"seq", {"128", "256", "512", "1024"}}};
  s.backends = {"cpu.reference", "cpu.flash"};
  s.warmup = 1;  // the Timeline labels the warm-up pass apart from the repetitions
  s.reps = 2;
  SweepRunner runner(registry);
  return RecordedSweep(store, s).run(runner, {}).sweep_id;
}

// A multi-head attention layer (kind layer, width 256) in training: checkpoint none and attention
// in one sweep, and the forward pass of the same grid in another, for the Memory view's forward / train / checkpoint series and the
// Breakdown's phases (forward and backward).
int64_t runTrainSweep(Store& store, BackendRegistry& registry, const std::string& name, const std::string& pass) {
  SweepSpec s;
  s.name = name;
  s.base.width = 256;  // model width fixed: head_dim = 256 / heads
  setField(s.base, "kind", "layer");
  setField(s.base, "pass", pass);
  s.axes = {{"heads", {"4", "8"}}, {"seq", {"512", "1024"}}};
  if (pass == "train") s.axes.push_back({"checkpoint", {"none", "attention"}});
  s.backends = {"cpu.reference", "cpu.flash"};
  s.warmup = 0;
  s.reps = 1;
  SweepRunner runner(registry);
  return RecordedSweep(store, s).run(runner, {}).sweep_id;
}

// A stack of attention layers in training (kind layer, layers 1, 2, 4) under every checkpoint, as
// issue 23's sweep: what checkpointing buys across a stack, in the Memory view. Then 4 layers at
// seq 1024 alone (six points, so each bar has room for its layers' names): the phases per layer in
// Breakdown and the Timeline.
int64_t runStackSweep(Store& store, BackendRegistry& registry, bool deep_only) {
  SweepSpec s;
  s.name = deep_only ? "stack of 4" : "stack";
  setField(s.base, "kind", "layer");
  setField(s.base, "pass", "train");
  setField(s.base, "heads", "8");
  setField(s.base, "head_dim", "64");
  setField(s.base, "mask", "causal");
  if (deep_only) {
    setField(s.base, "layers", "4");
    setField(s.base, "seq", "1024");
    s.axes = {{"checkpoint", {"none", "attention", "layer"}}};
  } else {
    s.axes = {{"layers", {"1", "2", "4"}}, {"seq", {"512", "1024"}}, {"checkpoint", {"none", "attention", "layer"}}};
  }
  s.backends = {"cpu.flash", "cpu.reference"};
  s.warmup = 1;
  s.reps = 2;
  SweepRunner runner(registry);
  return RecordedSweep(store, s).run(runner, {}).sweep_id;
}

void settle() {
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QThread::msleep(30);
  }
}

// settle(), then wait (at most 20 s) for a Timeline's trace to load on its pool thread.
void settleTimeline(ui::TimelineView* t) {
  settle();
  for (int k = 0; k < 400 && t->loading(); ++k) {
    QApplication::processEvents();
    QThread::msleep(50);
  }
}

bool grab(QWidget& w, const QString& file) {
  settle();
  // The Timeline and the Breakdown's phases load on a pool thread: wait for them (at most 20 s).
  for (int i = 0; i < 400; ++i) {
    bool loading = false;
    for (auto* t : w.findChildren<ui::TimelineView*>()) loading |= t->loading();
    for (auto* b : w.findChildren<ui::BreakdownView*>()) loading |= b->loadingPhases();
    if (!loading) break;
    QApplication::processEvents();
    QThread::msleep(50);
  }
  for (auto* view : w.findChildren<ui::ChartView*>())
    for (QCustomPlot* p : view->plots()) p->replot();
  settle();
  const bool ok = w.grab().save(file);
  std::printf("%s %s\n", ok ? "wrote" : "FAILED", qPrintable(file));
  return ok;
}

// A torch run's Timeline, zoomed to its profiled call (where its allocations are): the passes
// told apart, torch's ops one row per depth, each allocation named after the op that made it.
// Only where the torch backends run here (ATTNSCOPE_PYTHON or the settings' Python has torch);
// otherwise it says why and writes nothing, which is no failure.
bool grabTorchTimeline(ui::MainWindow& w, const QString& db, const QDir& out) {
  int64_t sweep = 0, run = 0;
  {
    Store store(db.toStdString());
    BackendRegistry registry;
    registerBuiltinBackends(registry);
    SweepSpec s;
    s.name = "torch math";
    setField(s.base, "heads", "4");
    setField(s.base, "seq", "512");
    s.backends = {"torch.cpu.math"};
    s.warmup = 1;
    s.reps = 3;
    SweepRunner runner(registry);
    sweep = RecordedSweep(store, s).run(runner, {}).sweep_id;
    for (const RunResult& r : store.runs(sweep))
      if (r.status == RunStatus::ok) run = r.id;
      else std::printf("skipped timeline-torch.png: torch.cpu.math did not run here (%s)\n", r.message.c_str());
  }
  if (run == 0) return true;
  // Listed as a user's F5 would (the dock lists on a pool thread), then picked there.
  for (QAction* a : w.findChildren<QAction*>())
    if (a->objectName() == "refreshAction") a->trigger();
  for (int k = 0; k < 100; ++k) {
    QApplication::processEvents();
    QThread::msleep(50);
  }
  w.showSweeps({sweep});
  w.runsPanel()->selectRun(sweep, run);
  for (int i = 0; i < w.tabs()->count(); ++i)
    if (auto* t = qobject_cast<ui::TimelineView*>(w.tabs()->widget(i))) {
      w.tabs()->setCurrentIndex(i);
      settleTimeline(t);
      // The profiled call: from the first allocation to the last event, a little either side.
      const std::vector<TraceEvent> events = Store(db.toStdString(), StoreMode::read).events(run);
      int64_t t0 = INT64_MAX, first = INT64_MAX, last = 0;
      for (const TraceEvent& e : events) {
        t0 = std::min(t0, e.start_ns);
        last = std::max({last, e.start_ns, e.end_ns});
        if (e.kind == EventKind::alloc) first = std::min(first, e.start_ns);
      }
      if (first == INT64_MAX) first = t0;
      const double span = static_cast<double>(last - first);
      t->setTimeRange(static_cast<double>(first - t0) - 0.05 * span, static_cast<double>(last - t0) + 0.02 * span);
      t->showSnapshot(static_cast<double>(t->memoryTimeline().peakNs() - t0));
    }
  return grab(w, out.filePath("timeline-torch.png"));
}

// The stack sweep's Memory view (peak vs layers beside vs seq), and the Breakdown and Timeline of
// the 4-layer sweep's cpu.reference run under checkpoint layer.
bool grabStack(ui::MainWindow& w, const QString& db, int64_t stack, int64_t deep, const QDir& out) {
  w.runsPanel()->selectSweep(stack);
  w.showSweeps({stack});
  bool ok = true;
  w.tabs()->setCurrentIndex(0);
  ok &= grab(w, out.filePath("memory-stack.png"));
  w.runsPanel()->selectSweep(deep);
  w.showSweeps({deep});
  {
    Store store(db.toStdString(), StoreMode::read);
    for (const RunResult& r : store.runs(deep))
      if (r.backend == "cpu.reference" && r.spec.checkpoint == Checkpoint::layer) w.runsPanel()->selectRun(deep, r.id);
  }
  w.tabs()->setCurrentIndex(3);
  ok &= grab(w, out.filePath("breakdown-stack.png"));
  // The Timeline zoomed to the first timed pass: each layer's forward, then the backward from L4
  // down with each layer's recompute, its steps lane by lane.
  w.tabs()->setCurrentIndex(4);
  for (auto* t : w.findChildren<ui::TimelineView*>()) {
    settleTimeline(t);
    const std::vector<TraceEvent> events = Store(db.toStdString(), StoreMode::read).events(t->runBox()->currentData().toLongLong());
    int64_t t0 = INT64_MAX;
    for (const TraceEvent& e : events) t0 = std::min(t0, e.start_ns);
    for (const ui::PassRange& pass : ui::passRanges(events, 1))
      if (pass.kind == ui::PassRange::Kind::rep) {
        const double span = static_cast<double>(pass.end_ns - pass.start_ns);
        t->setTimeRange(static_cast<double>(pass.start_ns - t0) - 0.02 * span, static_cast<double>(pass.end_ns - t0) + 0.02 * span);
        // The snapshot at that pass's own peak.
        MemoryPoint top{pass.start_ns, -1};
        for (const MemoryPoint& p : t->memoryTimeline().curve())
          if (p.t_ns >= pass.start_ns && p.t_ns <= pass.end_ns && p.bytes > top.bytes) top = p;
        t->showSnapshot(static_cast<double>(top.t_ns - t0));
        break;
      }
  }
  ok &= grab(w, out.filePath("timeline-stack.png"));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QTemporaryDir config;
  qputenv("XDG_CONFIG_HOME", config.path().toUtf8());  // never the user's settings
  ensureRuntimeDir();  // quiet like `attnscope gui`: no XDG_RUNTIME_DIR warning
  QApplication app(argc, argv);
  QCoreApplication::setOrganizationName("AttnScopeScreenshots");
  QCoreApplication::setApplicationName("AttnScopeScreenshots");
  if (argc < 2) {
    std::fprintf(stderr, "usage: attnscope_screenshots OUT_DIR\n");
    return 2;
  }
  const QDir out(QString::fromLocal8Bit(argv[1]));
  QDir().mkpath(out.path());
  if (argc == 4 && QString(argv[2]) == "--stack") {
    // Only the stack's pictures, from a database whose sweeps 1 and 2 are runStackSweep's (or the
    // CLI's `sweep --kind layer --layers 1,2,4 ...` and `--layers 4 --seq 1024`): to look again
    // without running them again.
    ui::MainWindow w(QString::fromLocal8Bit(argv[3]));
    w.setInteractive(false);
    w.resize(1680, 1000);
    w.show();
    return grabStack(w, QString::fromLocal8Bit(argv[3]), 1, 2, out) ? 0 : 1;
  }
  if (argc == 4 && QString(argv[2]) == "--tp") {
    // A tensor-parallel run from the CLI (`run --kind layer --backend torch.cpu.auto --tp 2 ...`,
    // run R1 of sweep S1 in DB): its Timeline (a curve and lanes per rank) and Breakdown.
    const QString tp_db = QString::fromLocal8Bit(argv[3]);
    ui::MainWindow w(tp_db);
    w.setInteractive(false);
    w.resize(1680, 1000);
    w.show();
    w.runsPanel()->selectSweep(1);
    w.showSweeps({1});
    w.runsPanel()->selectRun(1, 1);
    bool ok = true;
    w.tabs()->setCurrentIndex(3);
    ok &= grab(w, out.filePath("breakdown-tp.png"));
    w.tabs()->setCurrentIndex(4);
    for (auto* t : w.findChildren<ui::TimelineView*>()) {
      settleTimeline(t);
    }
    ok &= grab(w, out.filePath("timeline-tp.png"));
    return ok ? 0 : 1;
  }
  QTemporaryDir tmp;
  const QString db = tmp.filePath("sample.sqlite");
  int64_t dense = 0, causal = 0, train = 0, forward = 0, stack = 0, deep = 0;
  {
    Store store(db.toStdString());
    BackendRegistry registry;
    registerBuiltinBackends(registry);
    train = runTrainSweep(store, registry, "train", "train");
    forward = runTrainSweep(store, registry, "forward", "forward");
    causal = runSweep(store, registry, "width 64, causal", "causal");
    dense = runSweep(store, registry, "width 64, boolean mask per head", "dense");
    stack = runStackSweep(store, registry, false);
    deep = runStackSweep(store, registry, true);
  }
  ui::MainWindow w(db);
  w.setInteractive(false);
  w.resize(1680, 1000);
  w.show();
  w.runsPanel()->selectSweep(dense);
  w.runsPanel()->expandSweep(dense);
  w.showSweeps({dense});
  // Breakdown and Timeline of a materialising run: S and P allocated and freed, the bands of
  // what stays live moving down as blocks below them are freed.
  {
    Store store(db.toStdString(), StoreMode::read);
    for (const RunResult& r : store.runs(dense))
      if (r.backend == "cpu.reference" && r.spec.heads == 8 && r.spec.seq_q == 512) w.runsPanel()->selectRun(dense, r.id);
  }
  bool ok = true;
  const char* names[] = {"memory", "heatmap", "time", "breakdown", "timeline"};
  for (int i = 0; i < 5; ++i) {
    w.tabs()->setCurrentIndex(i);
    ok &= grab(w, out.filePath(QString("%1.png").arg(names[i])));
  }
  // A chart as a paper would carry it: a journal page's width (7.2 x 3.2 in) at 300 DPI, and the
  // PDF report (scripts/screenshots.sh turns its pages into PNGs).
  const QString err = QString::fromStdString(exportSweepChartPrinted(
      db.toStdString(), dense, "png", out.filePath("export-300dpi.png").toStdString(), 7.2, 3.2, 300));
  std::printf("%s %s\n", err.isEmpty() ? "wrote" : qPrintable("FAILED: " + err), qPrintable(out.filePath("export-300dpi.png")));
  ok &= err.isEmpty();
  QTemporaryDir report_dir;
  const std::string report_err = writeSweepReport(db.toStdString(), dense, report_dir.path().toStdString());
  ok &= report_err.empty() && QFile::copy(report_dir.filePath("report.pdf"), out.filePath("report.pdf.tmp"));
  QFile::remove(out.filePath("report.pdf"));
  QFile::rename(out.filePath("report.pdf.tmp"), out.filePath("report.pdf"));
  std::printf("%s %s\n", report_err.empty() ? "wrote" : report_err.c_str(), qPrintable(out.filePath("report.pdf")));
  // The Frontier of the classic report: width 64, fp16, a bool mask, torch 2.1 on a 16 GB V100.
  for (int i = 0; i < w.tabs()->count(); ++i)
    if (auto* f = qobject_cast<ui::FrontierView*>(w.tabs()->widget(i))) {
      SweepSpec classic;
      classic.base.width = 64;
      classic.base.dtype = DType::fp16;
      classic.base.mask = *parseMask("dense").mask;
      classic.axes = {{"heads", {"1", "2", "4", "8", "16", "32", "64"}}};
      f->torchBox()->setCurrentText("2.1.0");
      f->gpuBox()->setCurrentText("budget");
      f->budgetBox()->setCurrentText("V100");
      f->setPlannedSweep(classic);
      f->finishPending();
      w.tabs()->setCurrentIndex(i);
      ok &= grab(w, out.filePath("frontier.png"));
    }
  w.showSweeps({causal, dense});
  for (int i = 0; i < w.tabs()->count(); ++i)
    if (qobject_cast<ui::CompareView*>(w.tabs()->widget(i))) w.tabs()->setCurrentIndex(i);
  ok &= grab(w, out.filePath("compare.png"));
  w.tabs()->setCurrentIndex(0);
  ok &= grab(w, out.filePath("compare-memory.png"));
  // Forward vs train, checkpoint none vs attention: one series each per backend; then the
  // phases of a training layer run (projections, attention and their backward steps).
  w.showSweeps({train, forward});
  w.tabs()->setCurrentIndex(0);
  w.resize(1440, 900);  // a laptop screen: pattern, marker and shade keep the legend short
  ok &= grab(w, out.filePath("memory-train.png"));
  w.resize(1680, 1000);
  w.showSweeps({train});
  {
    Store store(db.toStdString(), StoreMode::read);
    for (const RunResult& r : store.runs(train))
      if (r.backend == "cpu.reference" && r.spec.heads == 8 && r.spec.seq_q == 1024 && r.spec.checkpoint == Checkpoint::attention)
        w.runsPanel()->selectRun(train, r.id);
  }
  w.tabs()->setCurrentIndex(3);
  ok &= grab(w, out.filePath("breakdown-phases.png"));
  // Dark palette: the View menu's toggle.
  for (QAction* a : w.menuBar()->findChildren<QAction*>())
    if (a->text() == QObject::tr("&Dark palette")) a->setChecked(true);
  w.showSweeps({dense});
  w.tabs()->setCurrentIndex(0);  // the Memory view: its shades on the dark background
  ok &= grab(w, out.filePath("memory-dark.png"));
  for (QAction* a : w.menuBar()->findChildren<QAction*>())
    if (a->text() == QObject::tr("&Dark palette")) a->setChecked(false);
  ok &= grabStack(w, db, stack, deep, out);
  ok &= grabTorchTimeline(w, db, out);
  return ok ? 0 : 1;
}
