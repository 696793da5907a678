// End to end through the main window: fill the form, run a small CPU sweep on the worker
// thread, check the plotted series equal the stored results; cancel midway and keep the
// finished points; invalid input disables Run; a foreign file is refused and left untouched; the
// Sweep dock's check mode is stored with the sweep and its coverage shown with every ok.

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QStandardPaths>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTreeView>

#include <qcustomplot.h>

#include "core/base/format.h"
#include "core/store/store.h"
#include "ui/backend_list_model.h"
#include "ui/breakdown_view.h"
#include "ui/main_window.h"
#include "ui/python_dialog.h"
#include "ui/memory_view.h"
#include "ui/results_table_model.h"
#include "ui/runs_panel.h"
#include "ui/sweep_panel.h"
#include "ui/sweep_tree_model.h"
#include "ui/timeline_view.h"
#include "ui/workload_form.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

// A mount namespace belongs to a thread, not to the process: entered later, by the test, the
// window's worker threads (and the thread pool's, started by earlier tests) would go on seeing the
// writable folder and create -wal and -shm in it behind the read-only view. Entered here, before
// main, while the process has one thread, every thread started afterwards shares it and sees the
// read-only bind mount that readOnlyDatabaseLoadsATimeline makes.
const bool kPrivateMounts = geteuid() == 0 && unshare(CLONE_NEWNS) == 0 &&
                            mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;

void fillTinySweep(MainWindow& w, const QString& heads, const QString& seq, int reps) {
  WorkloadForm* form = w.workloadForm();
  QVERIFY(form->setFieldText("batch", "1"));
  QVERIFY(form->setFieldText("head_dim", "8"));
  QVERIFY(form->setFieldText("mask", "none"));
  w.backendModel()->setCheckedIds({"cpu.reference", "cpu.flash"});
  w.sweepPanel()->setAxisText("heads", heads);
  w.sweepPanel()->setAxisText("seq", seq);
  w.sweepPanel()->setAxisText("other", "");
  w.sweepPanel()->findChild<QSpinBox*>("sweepReps")->setValue(reps);
}

// Every point of every measured graph is a stored run with that x and that measured peak.
int checkPlotAgainstStore(QCustomPlot* plot, Store& store, bool heads_axis) {
  int points = 0;
  for (int g = 0; g < plot->graphCount(); ++g) {
    QCPGraph* graph = plot->graph(g);
    if (graph->property("kind").toString() != "measured") continue;
    const QVariantList ids = graph->property("runIds").toList();
    const auto data = graph->data();
    if (ids.size() != data->size()) return -1;
    int i = 0;
    for (auto it = data->constBegin(); it != data->constEnd(); ++it, ++i) {
      const auto run = store.run(ids[i].toLongLong(), false);
      if (!run || run->status != RunStatus::ok) return -1;
      if (graph->property("backend").toString().toStdString() != run->backend) return -1;
      const double x = static_cast<double>(heads_axis ? run->spec.heads : run->spec.seq_q);
      if (it->key != x || it->value != static_cast<double>(run->memory.measured_peak)) return -1;
      ++points;
    }
  }
  return points;
}

}  // namespace

class TestWindow : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void invalidInputDisablesRun() {
    MainWindow w(dir_.filePath("invalid.sqlite"));
    w.setInteractive(false);
    fillTinySweep(w, "1, 2", "16", 1);
    QVERIFY(w.runAction()->isEnabled());
    w.workloadForm()->setFieldText("heads", "8");
    w.workloadForm()->setFieldText("kv_heads", "3");
    QVERIFY(!w.runAction()->isEnabled());
    auto* message = w.workloadForm()->findChild<QLabel*>("workloadMessage");
    QVERIFY(message->text().contains("kv_heads"));
    // The form's error is the form's: the empty other-axes list stays white, the Sweep dock counts
    // no points and says where to look, and no message repeats once per point.
    auto* other = w.sweepPanel()->findChild<QLineEdit*>("sweepOther");
    QVERIFY2(other->styleSheet().isEmpty(), qPrintable(other->styleSheet()));
    auto* sweep_summary = w.sweepPanel()->findChild<QLabel*>("sweepSummary");
    QVERIFY2(sweep_summary->text().contains("fix the highlighted Workload field"), qPrintable(sweep_summary->text()));
    const QStringList lines = w.sweepPanel()->findChild<QLabel*>("sweepMessage")->text().split('\n');
    QCOMPARE(QSet<QString>(lines.begin(), lines.end()).size(), lines.size());
    QVERIFY(w.runAction()->toolTip().contains("kv_heads"));
    QVERIFY(!w.startSweep());
    w.workloadForm()->setFieldText("kv_heads", "0");
    QVERIFY(w.runAction()->isEnabled());
    w.workloadForm()->setFieldText("mask", "window:abc");
    QVERIFY(!w.runAction()->isEnabled());
    QVERIFY(message->text().contains("mask"));
    QVERIFY2(!sweep_summary->text().contains("point(s)"), qPrintable(sweep_summary->text()));
    w.workloadForm()->setFieldText("mask", "causal");
    QVERIFY(w.runAction()->isEnabled());
    // A bad sweep list disables Run too, with the sweep's message.
    w.sweepPanel()->setAxisText("heads", "1, 0");
    QVERIFY(!w.runAction()->isEnabled());
    QVERIFY(w.sweepPanel()->findChild<QLabel*>("sweepMessage")->text().contains("heads"));
  }

  // A field the Sweep dock sweeps reads its list, greyed; the base value stays in the spec. With
  // a fixed model width the derived head_dim says it follows heads.
  void sweptFieldsShowTheirList() {
    MainWindow w(dir_.filePath("swept.sqlite"));
    w.setInteractive(false);
    w.workloadForm()->setFieldText("heads", "8");
    w.sweepPanel()->setAxisText("heads", "2, 4");
    w.sweepPanel()->setAxisText("seq", "128, 256");
    auto* heads = qobject_cast<QSpinBox*>(w.workloadForm()->fieldWidget("heads"));
    QVERIFY(heads);
    QTRY_COMPARE(heads->text(), QString("swept: 2, 4"));
    QVERIFY(!heads->isEnabled());
    QCOMPARE(heads->value(), 8);
    QCOMPARE(w.workloadForm()->spec().heads, 8);
    QVERIFY(w.workloadForm()->setFieldText("width", "256"));  // fixed model width
    auto* head_dim = qobject_cast<QSpinBox*>(w.workloadForm()->fieldWidget("head_dim"));
    QTRY_COMPARE(head_dim->text(), QString("width \u00f7 heads"));
    // Not swept any more: the value again.
    w.sweepPanel()->setAxisText("heads", "");
    QTRY_COMPARE(heads->text(), QString("8"));
    QVERIFY(heads->isEnabled());
    QCOMPARE(head_dim->text(), QString("32"));
  }

  // Settings > Python says what the interpreter holds before it is kept.
  void pythonDialogChecks() {
    PythonDialog dlg("no-such-python-for-attnscope");
    QTRY_VERIFY(!dlg.checking());
    QVERIFY2(dlg.result().contains("not found: 'no-such-python-for-attnscope' is not on PATH"), qPrintable(dlg.result()));
    dlg.findChild<QLineEdit*>("pythonPath")->setText("/nonexistent/bin/python");
    dlg.check();
    QTRY_VERIFY_WITH_TIMEOUT(!dlg.checking(), 20000);
    QVERIFY2(dlg.result().contains("cannot run /nonexistent/bin/python"), qPrintable(dlg.result()));
    // Debian's python3 has no torch (the torch venv is separate): said so, with Python's words.
    const QString system = QStandardPaths::findExecutable("python3");
    if (!system.isEmpty()) {
      QProcess probe;
      probe.start(system, {"-c", "import torch"});
      QVERIFY(probe.waitForFinished(60000));
      dlg.findChild<QLineEdit*>("pythonPath")->setText(system);
      dlg.check();
      QTRY_VERIFY_WITH_TIMEOUT(!dlg.checking(), 60000);
      if (probe.exitCode() != 0)
        QVERIFY2(dlg.result().startsWith("no torch in " + system) && dlg.result().contains("torch"), qPrintable(dlg.result()));
      else
        QVERIFY2(dlg.result().startsWith("found torch "), qPrintable(dlg.result()));
    }
  }

  void workloadDockShowsEveryFieldOnALaptopScreen() {
    // 1280 x 800, the window's first-start layout: the form is not scrolled to reach seed, and
    // no field is wider than the dock (no sideways scrolling).
    MainWindow w(dir_.filePath("small.sqlite"));
    w.setInteractive(false);
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QApplication::processEvents();
    auto* area = qobject_cast<QScrollArea*>(w.findChild<QDockWidget*>("workloadDock")->widget());
    QVERIFY(area);
    QCOMPARE(area->verticalScrollBar()->maximum(), 0);
    QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
    auto* scale = w.workloadForm()->findChild<QLineEdit*>("scale");
    QVERIFY(scale);
    // The placeholder is whole in its box.
    QVERIFY2(scale->fontMetrics().horizontalAdvance(scale->placeholderText()) < scale->width() - 8,
             qPrintable(scale->placeholderText()));
    // A stack's depth and tensor parallelism are rows of kind layer's form only.
    WorkloadForm* form = w.workloadForm();
    for (const char* name : {"layers", "tp", "tp_comm"}) {
      QWidget* field = form->findChild<QWidget*>(name);
      QVERIFY2(field && !field->isVisibleTo(form), name);
    }
    QVERIFY(form->setFieldText("kind", "layer"));
    for (const char* name : {"layers", "tp", "tp_comm"}) QVERIFY2(form->findChild<QWidget*>(name)->isVisibleTo(form), name);
    QVERIFY(form->setFieldText("kind", "attention"));
    QVERIFY(!form->findChild<QWidget*>("layers")->isVisibleTo(form));
  }

  void firstStartFitsTheScreenAndSaysWhatToDo() {
    // A laptop's screen is taken whole (at 90 % of 1280 x 800 the charts' minimum squeezed the
    // Sweep dock until its fields were cut); a larger one keeps a margin.
    QCOMPARE(MainWindow::firstStartSize({1280, 800}), QSize(1280, 800));
    QCOMPARE(MainWindow::firstStartSize({1440, 900}), QSize(1440, 900));
    QCOMPARE(MainWindow::firstStartSize({1920, 1080}), QSize(1728, 972));
    MainWindow w(dir_.filePath("first.sqlite"));
    w.setInteractive(false);
    w.resize(MainWindow::firstStartSize({1280, 800}));
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QApplication::processEvents();
    // The Sweep dock: no field cut (no sideways scrolling), its form and point count in view.
    auto* area = qobject_cast<QScrollArea*>(w.findChild<QDockWidget*>("sweepDock")->widget());
    QVERIFY(area);
    QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
    QCOMPARE(area->verticalScrollBar()->maximum(), 0);
    // The first-start note in each empty memory chart: every line inside the plot area.
    for (QCustomPlot* plot : w.memoryView()->plots()) {
      plot->replot();
      QCPItemText* note = nullptr;
      for (int i = 0; i < plot->itemCount(); ++i)
        if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)); t && t->text().contains("No sweep shown yet")) note = t;
      QVERIFY(note);
      const QFontMetrics metrics(note->font());
      for (const QString& line : note->text().split('\n'))
        QVERIFY2(metrics.horizontalAdvance(line) <= plot->axisRect()->width(),
                 qPrintable(QString("'%1' is %2 px in a %3 px plot").arg(line).arg(metrics.horizontalAdvance(line))
                                .arg(plot->axisRect()->width())));
      QVERIFY(note->text().contains("Run (Ctrl+R)"));
      // And no empty legend frame beside it.
      QCOMPARE(plot->legend->borderPen().style(), Qt::NoPen);
    }
  }

  void everyTabHasAKeyAndHelpListsThem() {
    MainWindow w(dir_.filePath("keys.sqlite"));
    w.setInteractive(false);
    w.resize(1280, 800);
    w.show();
    QApplication::setActiveWindow(&w);
    QVERIFY(QTest::qWaitForWindowActive(&w));
    QTabWidget* tabs = w.tabs();
    QVERIFY(tabs->count() >= 10);
    for (int i = 0; i < std::min(tabs->count(), 10); ++i) {
      // Ctrl+1 ... Ctrl+9, Ctrl+0: typed as a user does, on the window.
      const Qt::Key key = i == 9 ? Qt::Key_0 : static_cast<Qt::Key>(Qt::Key_1 + i);
      tabs->setCurrentIndex(i == 0 ? 1 : 0);
      QTest::keyClick(&w, key, Qt::ControlModifier);
      QCOMPARE(tabs->currentIndex(), i);
      const QString name = QKeySequence(Qt::CTRL | key).toString(QKeySequence::NativeText);
      QVERIFY2(tabs->tabToolTip(i).contains(name), qPrintable(tabs->tabToolTip(i)));
    }
    const QString help = w.shortcutsHelp();
    for (const char* want : {"Ctrl+R", "Run sweep", "F5", "Ctrl+E", "Ctrl+3", "the Time tab", "W, S", "A, D", "right- or Shift-drag"})
      QVERIFY2(help.contains(QString::fromUtf8(want)), want);
    QAction* keys = w.findChild<QAction*>("shortcutsAction");
    QVERIFY(keys);
    QCOMPARE(keys->shortcut(), QKeySequence(QKeySequence::HelpContents));
  }

  // The additive mask is one of the mask's suggestions and mask_dtype a field of its own: "same as
  // dtype" (the default) or a dtype; a mask_dtype torch would refuse, or one without an additive
  // mask, is highlighted and named, and disables Run.
  void additiveMaskAndItsDTypeInTheForm() {
    MainWindow w(dir_.filePath("additive.sqlite"));
    w.setInteractive(false);
    fillTinySweep(w, "1, 2", "16", 1);
    WorkloadForm* form = w.workloadForm();
    auto* mask = form->findChild<QComboBox*>("mask");
    auto* mask_dtype = form->findChild<QComboBox*>("mask_dtype");
    QVERIFY(mask && mask_dtype);
    QVERIFY(mask->findText("additive") >= 0);
    QVERIFY(mask->findText("additive:0.5") >= 0);
    QCOMPARE(mask_dtype->itemText(0), QString("same as dtype"));
    QCOMPARE(mask_dtype->currentText(), QString("same as dtype"));
    for (const char* d : {"fp32", "fp16", "bf16"}) QVERIFY(mask_dtype->findText(d) >= 0);

    QVERIFY(form->setFieldText("mask", "additive:0.5"));
    QVERIFY(form->setFieldText("mask_dtype", "fp32"));
    QCOMPARE(mask_dtype->currentText(), QString("fp32"));
    QVERIFY(form->spec().mask.kind == MaskKind::additive);
    QVERIFY(form->spec().mask_dtype == DType::fp32);
    QVERIFY(w.runAction()->isEnabled());
    QVERIFY(mask_dtype->styleSheet().isEmpty());

    auto* message = form->findChild<QLabel*>("workloadMessage");
    QVERIFY(form->setFieldText("dtype", "bf16"));
    QVERIFY(form->setFieldText("mask_dtype", "fp16"));  // torch takes fp32 or q's dtype
    QVERIFY(!w.runAction()->isEnabled());
    QVERIFY(mask_dtype->styleSheet().contains("#f8d0d0"));
    QVERIFY(message->text().contains("mask_dtype"));
    QVERIFY2(mask_dtype->toolTip().contains("allowed: q, fp32, bf16"), qPrintable(mask_dtype->toolTip()));
    QVERIFY(form->setFieldText("mask_dtype", ""));  // back to "same as dtype"
    QCOMPARE(mask_dtype->currentText(), QString("same as dtype"));
    QVERIFY(!form->spec().mask_dtype);
    QVERIFY(w.runAction()->isEnabled());
    QVERIFY(mask_dtype->styleSheet().isEmpty());

    QVERIFY(form->setFieldText("mask_dtype", "bf16"));
    QVERIFY(form->setFieldText("mask", "causal"));  // a mask_dtype without a float mask
    QVERIFY(!w.runAction()->isEnabled());
    QVERIFY(mask_dtype->styleSheet().contains("#f8d0d0"));
    QVERIFY(message->text().contains("only for an additive mask"));

    // A spec put into the form shows its mask_dtype, the default as "same as dtype".
    WorkloadSpec s = form->spec();
    s.mask = parseMask("additive").mask.value();
    s.mask_dtype = std::nullopt;
    form->setSpec(s);
    QCOMPARE(mask_dtype->currentText(), QString("same as dtype"));
    QVERIFY(w.runAction()->isEnabled());
    s.mask_dtype = DType::fp32;
    form->setSpec(s);
    QCOMPARE(mask_dtype->currentText(), QString("fp32"));
    QVERIFY(form->spec() == s);
  }

  void formShowsSweptAndDerivedFields() {
    MainWindow w(dir_.filePath("form.sqlite"));
    w.setInteractive(false);
    fillTinySweep(w, "1, 2", "16", 1);
    auto* heads = w.workloadForm()->findChild<QSpinBox*>("heads");
    auto* head_dim = w.workloadForm()->findChild<QSpinBox*>("head_dim");
    auto* width = w.workloadForm()->findChild<QSpinBox*>("width");
    // heads is swept: greyed and labelled, and its form value no longer blocks the sweep.
    QVERIFY(!heads->isEnabled());
    QVERIFY(heads->text().startsWith("swept"));
    w.sweepPanel()->setAxisText("heads", "");
    QVERIFY(heads->isEnabled());
    QVERIFY(!heads->text().startsWith("swept"));
    // Derived fields follow: width = heads x head_dim with head_dim fixed, and back.
    w.workloadForm()->setFieldText("heads", "8");
    w.workloadForm()->setFieldText("head_dim", "64");
    QCOMPARE(width->value(), 512);
    w.workloadForm()->setFieldText("width", "64");
    QCOMPARE(head_dim->value(), 8);
    QVERIFY(!head_dim->isEnabled());
    // An invalid list is highlighted and the count says so.
    w.sweepPanel()->setAxisText("heads", "0, 4, abc");
    auto* list = w.sweepPanel()->findChild<QLineEdit*>("sweepHeads");
    QVERIFY(!list->styleSheet().isEmpty());
    QVERIFY(w.sweepPanel()->findChild<QLabel*>("sweepSummary")->text().startsWith("invalid"));
    QVERIFY(!w.runAction()->isEnabled());
    w.sweepPanel()->setAxisText("heads", "4");
    QVERIFY(list->styleSheet().isEmpty());
    // Run is in plain sight, not only in a menu.
    QVERIFY(w.findChild<QWidget*>("runButton"));
  }

  void runSweepEndToEnd() {
    const QString db = dir_.filePath("e2e.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    fillTinySweep(w, "1, 2", "16, 32", 1);
    QCOMPARE(static_cast<int>(w.sweepPanel()->sweep().pointCount()), 8);
    QVERIFY(w.sweepPanel()->predictedLargestPeak() > 0);
    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    w.runAction()->trigger();
    QVERIFY(w.isRunning());
    QVERIFY(!w.runAction()->isEnabled());
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.front().at(1).toString(), QString("finished"));
    const int64_t id = finished.front().at(0).toLongLong();

    Store store(db.toStdString(), StoreMode::existing);
    const auto runs = store.runs(id);
    QCOMPARE(static_cast<int>(runs.size()), 8);
    int ok = 0;
    for (const auto& r : runs) ok += r.status == RunStatus::ok;
    QCOMPARE(ok, 8);
    QCOMPARE(checkPlotAgainstStore(w.memoryView()->headsPlot(), store, true), 8);
    QCOMPARE(checkPlotAgainstStore(w.memoryView()->seqPlot(), store, false), 8);
    // heads plot: one series per backend and seq value; predicted dashed alongside.
    int measured = 0, predicted = 0;
    for (int g = 0; g < w.memoryView()->headsPlot()->graphCount(); ++g) {
      const QString kind = w.memoryView()->headsPlot()->graph(g)->property("kind").toString();
      measured += kind == "measured";
      predicted += kind == "predicted";
    }
    QCOMPARE(measured, 4);
    QCOMPARE(predicted, 4);
    // The Runs dock shows the sweep with its 8 runs as children.
    const QModelIndex row = w.sweepTreeModel()->sweepIndex(id);
    QCOMPARE(w.sweepTreeModel()->rowCount(row), 8);
    QCOMPARE(row.siblingAtColumn(SweepTreeModel::StateColumn).data().toString(), QString("finished"));
    QCOMPARE(row.siblingAtColumn(SweepTreeModel::PointsColumn).data().toString(), QString("8/8 ok"));
    QVERIFY(w.runAction()->isEnabled());
    w.close();
  }

  void checkModeIsStoredAndShown() {
    const QString db = dir_.filePath("check.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    fillTinySweep(w, "1, 2", "16", 1);
    auto* check = w.sweepPanel()->findChild<QComboBox*>("sweepCheck");
    QVERIFY(check);
    QCOMPARE(check->currentText(), QString("auto"));
    check->setCurrentIndex(check->findText("off"));
    QVERIFY(w.sweepPanel()->sweep().check == CheckMode::off);
    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    QVERIFY(w.startSweep());
    QVERIFY(finished.wait(120000));
    const int64_t id = finished.front().at(0).toLongLong();
    Store store(db.toStdString(), StoreMode::read);
    QVERIFY(sweepSpecFromJson(store.sweep(id)->spec).check == CheckMode::off);
    for (const auto& r : store.runs(id)) QVERIFY(r.status == RunStatus::ok && !r.accuracy.checked);
    QAbstractItemModel* results = w.findChild<QTableView*>("resultsView")->model();
    QTRY_COMPARE(results->rowCount(), 4);
    for (int r = 0; r < 4; ++r)
      QCOMPARE(results->index(r, ResultsTableModel::StatusColumn).data().toString(), QString("ok, not checked"));
    QCOMPARE(w.sweepTreeModel()->sweepIndex(id, SweepTreeModel::PointsColumn).data().toString(),
             QString("4/4 ok (4 not every row checked)"));
  }

  void cancelKeepsFinishedPoints() {
    const QString db = dir_.filePath("cancel.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    fillTinySweep(w, "1, 2, 4, 8, 16", "256, 512, 1024, 2048", 3);
    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    QVERIFY(w.startSweep());
    // Wait for the first finished point to reach the charts, then cancel (Esc's action).
    QTRY_VERIFY_WITH_TIMEOUT(!w.shownSweeps().empty() && !w.shownSweeps().front()->runs.empty(), 120000);
    // Finished points appear as the running sweep's children in the Runs dock as they arrive.
    const int64_t running = w.shownSweeps().front()->info.id;
    const QModelIndex row = w.sweepTreeModel()->sweepIndex(running);
    QCOMPARE(row.siblingAtColumn(SweepTreeModel::StateColumn).data().toString(), QString("running"));
    // (The dock may also reload the sweep from the store meanwhile, which can hold a point more
    // than the charts were handed: the counts need not be equal at any one moment.)
    QTRY_VERIFY(w.sweepTreeModel()->rowCount(w.sweepTreeModel()->sweepIndex(running)) > 0);
    w.cancelAction()->trigger();
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.front().at(1).toString(), QString("cancelled"));
    const int64_t id = finished.front().at(0).toLongLong();
    Store store(db.toStdString(), StoreMode::existing);
    const auto runs = store.runs(id);
    QVERIFY(!runs.empty());
    QVERIFY(runs.size() < 40);
    QCOMPARE(QString::fromStdString(store.sweep(id)->state), QString("cancelled"));
    QCOMPARE(w.shownSweeps().front()->runs.size(), runs.size());
    QCOMPARE(static_cast<size_t>(w.sweepTreeModel()->rowCount(w.sweepTreeModel()->sweepIndex(id))), runs.size());
    int ok = 0;
    for (const auto& r : runs) ok += r.status == RunStatus::ok;
    QCOMPARE(checkPlotAgainstStore(w.memoryView()->headsPlot(), store, true), ok);
  }

  void skippedPointsMarkedAtPrediction() {
    const QString db = dir_.filePath("budget.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    fillTinySweep(w, "1, 2", "16, 256", 1);
    w.sweepPanel()->findChild<QDoubleSpinBox*>("sweepBudget")->setValue(0.1);  // MiB
    QVERIFY(w.sweepPanel()->findChild<QLabel*>("sweepSummary")->text().contains("skipped"));
    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    QVERIFY(w.startSweep());
    QVERIFY(finished.wait(120000));
    Store store(db.toStdString(), StoreMode::existing);
    const auto runs = store.runs(finished.front().at(0).toLongLong());
    int skipped = 0;
    for (const auto& r : runs) skipped += r.status == RunStatus::skipped;
    QVERIFY(skipped > 0);
    QVERIFY(skipped < static_cast<int>(runs.size()));
    // Skipped points are drawn as their own markers at the predicted peak.
    int marked = 0;
    QCustomPlot* plot = w.memoryView()->headsPlot();
    for (int g = 0; g < plot->graphCount(); ++g) {
      QCPGraph* graph = plot->graph(g);
      if (graph->property("kind").toString() != "skipped") continue;
      QCOMPARE(graph->lineStyle(), QCPGraph::lsNone);
      const QVariantList ids = graph->property("runIds").toList();
      int i = 0;
      for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it, ++i) {
        const auto run = store.run(ids[i].toLongLong(), false);
        QVERIFY(run && run->status == RunStatus::skipped);
        QCOMPARE(it->value, static_cast<double>(run->memory.predicted_peak));
        ++marked;
      }
    }
    QCOMPARE(marked, skipped);
  }

  void foreignFileRefusedAndUntouched() {
    const QString db = dir_.filePath("good.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    const QString foreign = dir_.filePath("notes.sqlite");
    QFile f(foreign);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const QByteArray content = "this is not a database, just some text\n";
    f.write(content);
    f.close();
    const QString error = w.openDatabase(foreign);
    QVERIFY(!error.isEmpty());
    QVERIFY(error.contains("notes.sqlite"));
    QCOMPARE(w.databasePath(), db);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), content);
  }

  // File > Merge database...: the merge runs off the GUI thread, the Runs dock lists the merged
  // sweep, a foreign source is refused untouched and named, and a second merge adds nothing.
  void mergeDatabaseShowsTheMergedSweepInTheRunsDock() {
    const QString db = dir_.filePath("merge-into.sqlite");
    const QString src = dir_.filePath("merge-from.sqlite");
    int64_t source_runs = 0;
    {
      Store store(src.toStdString());
      auto spec = test::tinySweep();
      spec.name = "from the other machine";
      test::runSweepInto(store, spec);
      source_runs = store.sweeps().front().run_count;
    }
    { Store create(db.toStdString()); }
    MainWindow w(db);
    w.setInteractive(false);
    QAbstractItemModel* tree = w.runsPanel()->view()->model();
    QCOMPARE(tree->rowCount(), 0);
    const QString foreign = dir_.filePath("merge-notes.txt");
    QFile f(foreign);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("not a database\n");
    f.close();
    QVERIFY(w.mergeDatabases({src, foreign}));
    QVERIFY(w.isMerging());
    QVERIFY(!w.mergeDatabases({src}));  // one merge at a time
    QTRY_VERIFY_WITH_TIMEOUT(!w.isMerging(), 30000);
    QVERIFY2(w.lastMessage().contains(QString("merge-from.sqlite: %1 runs added").arg(source_runs)), qPrintable(w.lastMessage()));
    QVERIFY2(w.lastMessage().contains("merge-notes.txt refused"), qPrintable(w.lastMessage()));
    QTRY_COMPARE_WITH_TIMEOUT(tree->rowCount(), 1, 10000);
    QVERIFY(tree->index(0, 1).data().toString().contains("from the other machine") ||
            tree->index(0, 0).data().toString().startsWith("S"));
    QVERIFY(w.mergeDatabases({src}));
    QTRY_VERIFY_WITH_TIMEOUT(!w.isMerging(), 30000);
    QVERIFY2(w.lastMessage().contains("0 runs added"), qPrintable(w.lastMessage()));
    Store check(db.toStdString(), StoreMode::read);
    QCOMPARE(check.sweeps().size(), size_t(1));
    QCOMPARE(check.sweeps().front().run_count, source_runs);
  }

  void runSelectedInDockShowsInBreakdown() {
    const QString db = dir_.filePath("dock.sqlite");
    int64_t first = 0, second = 0;
    {
      Store store(db.toStdString());
      first = test::runSweepInto(store, test::tinySweep());
      auto spec = test::tinySweep();
      spec.name = "second";
      spec.axes = {{"heads", {"4"}}};
      second = test::runSweepInto(store, spec);
    }
    MainWindow w(db);
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    // Opening the database shows the newest sweep; sweeps are top-level rows, runs children.
    QCOMPARE(w.shownSweeps().size(), size_t(1));
    QCOMPARE(w.shownSweeps().front()->info.id, second);
    QTreeView* view = w.runsPanel()->view();
    QAbstractItemModel* tree = view->model();
    QCOMPARE(tree->rowCount(), 2);
    QModelIndex sweep;
    for (int r = 0; r < tree->rowCount(); ++r)
      if (tree->index(r, 0).data(SweepTreeModel::SweepIdRole).toLongLong() == first) sweep = tree->index(r, 0);
    QVERIFY(sweep.isValid());
    QCOMPARE(sweep.data().toString(), QString("S%1").arg(first));
    view->expand(sweep);
    QCOMPARE(tree->rowCount(sweep), 8);

    // Click a run of the other sweep that is not the Breakdown's default (its last run).
    Store store(db.toStdString(), StoreMode::existing);
    const auto run = store.run(store.runs(first).front().id, false);
    QVERIFY(run && !run->plan.buffers.empty());
    QModelIndex child;
    for (int r = 0; r < tree->rowCount(sweep); ++r)
      if (tree->index(r, 0, sweep).data(SweepTreeModel::RunIdRole).toLongLong() == run->id) child = tree->index(r, 0, sweep);
    QVERIFY(child.isValid());
    QCOMPARE(child.data().toString(), QString("R%1").arg(run->id));
    view->scrollTo(child);
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, view->visualRect(child).center());
    QCOMPARE(w.runsPanel()->selectedRunIds(), std::vector<int64_t>{run->id});

    // Its sweep is in the charts, the run in the Breakdown (its plan's buffers and bytes) and
    // in the Timeline.
    QCOMPARE(w.shownSweeps().size(), size_t(1));
    QCOMPARE(w.shownSweeps().front()->info.id, first);
    BreakdownView* breakdown = nullptr;
    for (ChartView* v : w.chartViews())
      if (auto* b = qobject_cast<BreakdownView*>(v)) breakdown = b;
    QVERIFY(breakdown);
    QCOMPARE(breakdown->runBox()->currentData().toLongLong(), run->id);
    const QString text = breakdown->findChild<QLabel*>("breakdownBuffers")->text();
    QVERIFY(text.contains(QString::fromStdString(summary(run->spec))));
    for (const PlannedBuffer& b : run->plan.buffers) {
      QVERIFY(text.contains(QString::fromStdString(b.name)));
      QVERIFY(text.contains(QString::fromStdString(formatBytes(b.bytes))));
    }
    QVERIFY(text.contains(QString::fromStdString(formatBytes(run->memory.predicted_peak))));
    QVERIFY(text.contains(QString::fromStdString(formatBytes(run->memory.measured_peak))));
    auto* timeline_run = w.findChild<QComboBox*>("timelineRun");
    QVERIFY(timeline_run);
    QCOMPARE(timeline_run->currentData().toLongLong(), run->id);

    // Deleting the selected run (confirmation off) removes it from the store, the dock and
    // the charts.
    w.runsPanel()->setConfirmDeletes(false);
    w.runsPanel()->deleteSelected();
    QVERIFY(!store.run(run->id, false));
    QCOMPARE(tree->rowCount(sweep), 7);
    QCOMPARE(w.shownSweeps().front()->runs.size(), size_t(7));
    QCOMPARE(breakdown->runBox()->findData(QVariant::fromValue<qlonglong>(run->id)), -1);
  }

  // The Timeline's and the Breakdown's loaders open the database for reading: a database the
  // window may only read (a read-only bind mount as root, since root ignores permission bits;
  // chmod otherwise) still shows a run's trace, and nothing is written.
  void readOnlyDatabaseLoadsATimeline() {
    const QString folder = dir_.filePath("readonly");
    QVERIFY(QDir().mkpath(folder));
    const QString db = folder + "/ro.sqlite";
    int64_t sweep = 0;
    {
      Store store(db.toStdString());
      sweep = test::runSweepInto(store, test::tinySweep());
    }
    const QByteArray folder_bytes = folder.toLocal8Bit();
    bool mounted = false;
    if (geteuid() == 0) {
      mounted = kPrivateMounts &&
                mount(folder_bytes.constData(), folder_bytes.constData(), nullptr, MS_BIND, nullptr) == 0 &&
                mount(nullptr, folder_bytes.constData(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr) == 0;
      if (!mounted) QSKIP("no private read-only mount here (needs CAP_SYS_ADMIN)");
    } else {
      QVERIFY(::chmod(db.toLocal8Bit().constData(), 0444) == 0 && ::chmod(folder_bytes.constData(), 0555) == 0);
    }
    {
      MainWindow w(db);
      w.setInteractive(false);
      w.resize(1400, 900);
      w.show();
      QVERIFY(w.store());
      QVERIFY(w.store()->readOnly());
      TimelineView* timeline = w.findChild<TimelineView*>();
      QVERIFY(timeline);
      Store reader(db.toStdString(), StoreMode::read);
      const int64_t run = reader.runs(sweep).front().id;
      timeline->selectRun(run);
      QTRY_VERIFY_WITH_TIMEOUT(!timeline->loading(), 20000);
      QVERIFY2(timeline->memoryTimeline().peakBytes() > 0, qPrintable(w.lastMessage()));
      QCOMPARE(timeline->memoryTimeline().peakBytes(), reader.run(run, false)->memory.measured_peak);
    }
    if (mounted) umount2(folder_bytes.constData(), MNT_DETACH);
    else ::chmod(folder_bytes.constData(), 0755);
  }

  void settingsPersist() {
    {
      MainWindow w(dir_.filePath("settings.sqlite"));
      w.setInteractive(false);
      fillTinySweep(w, "2, 4", "64", 2);
      w.workloadForm()->setFieldText("width", "32");
      w.close();
    }
    MainWindow w(dir_.filePath("settings.sqlite"));
    const SweepSpec s = w.sweepPanel()->sweep();
    QCOMPARE(s.base.width, 32);
    QCOMPARE(s.reps, 2);
    QCOMPARE(s.axes.front().values, (std::vector<std::string>{"2", "4"}));
  }

 private:
  QTemporaryDir dir_;
};

ATTNSCOPE_UI_TEST_MAIN(TestWindow)
#include "test_window.moc"
