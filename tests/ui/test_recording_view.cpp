// Recordings (`attnscope record`) in the window: a recording saved in a real store is listed in
// the Runs dock beside the sweeps, opens in the Recording tab with one row per call sorted by
// measured memory, is explained for another torch and GPU as `show REC --torch --gpu` explains
// it, says WRONG where torch ran another kernel than predicted, shows a call's verdict and
// buffers, sweeps a call from the Workload form, and is deleted like a sweep. What another
// connection writes (as the CLI in a terminal would) reaches the open window's dock. The models
// run under QAbstractItemModelTester.

#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QTreeView>

#include <nlohmann/json.hpp>

#include "core/base/format.h"
#include "core/record/recording_explain.h"
#include "core/store/store.h"
#include "ui/explained_recording.h"
#include "ui/main_window.h"
#include "ui/recorded_calls_model.h"
#include "ui/recording_list_model.h"
#include "ui/recording_view.h"
#include "ui/runs_panel.h"
#include "ui/store_watcher.h"
#include "ui/sweep_panel.h"
#include "ui/sweep_tree_model.h"
#include "ui/workload_form.h"
#include "tests/support/recorder_json.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;
using namespace attnscope::torch_dispatch;
using nlohmann::json;

namespace {

// The recorder's JSON, written by hand (tests/support/recorder_json.h).
json call(int64_t heads, int64_t seq, int64_t d, json mask, const std::string& ran, int64_t bytes_max) {
  return attnscope::test::recordedCall(heads, seq, d, std::move(mask), ran, 0, bytes_max);
}
json boolMask(std::vector<int64_t> shape) { return attnscope::test::recordedBoolMask(std::move(shape)); }
json recorderFile(json calls) { return attnscope::test::recorderFile(std::move(calls), "2.15.0+cpu", 9); }

// Row 1: heads 8, head_dim 8 (flash everywhere). Row 2: heads 16, head_dim 4, the classic report
// (math on a V100 with torch 2.1), the largest measured. Row 3: torch ran math where the rules
// predict another kernel.
Recording cliffRecording(const std::string& name) {
  const json mask = boolMask({1, 1, 1024, 1024});
  Recording r = recordingFromRecorderJson(recorderFile(
      {call(8, 1024, 8, mask, "flash", 1200), call(16, 1024, 4, mask, "flash", 5000), call(4, 256, 16, {{"kind", "none"}}, "math", 3000)}));
  r.name = name;
  r.program = {"examples/heads_cliff.py", "--seq", "1024"};
  r.cwd = "/work";
  r.exit_status = 0;
  r.started_unix_ms = 1000;
  r.ended_unix_ms = 2000;
  return r;
}

// The table's row (in the view's order) of the recorded call `row`; -1 when absent.
int viewRow(QAbstractItemModel* m, int64_t row) {
  for (int r = 0; r < m->rowCount(); ++r)
    if (m->index(r, 0).data(RecordedCallsModel::CallRowRole).toLongLong() == row) return r;
  return -1;
}

QString cell(QAbstractItemModel* m, int64_t row, int column) { return m->index(viewRow(m, row), column).data().toString(); }

}  // namespace

class TestRecordingView : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // Cell by cell, the window's "on target" and "change" are `show REC --torch 2.1 --gpu V100`'s.
  void changeIsTheCliChange() {
    auto rec = std::make_shared<const Recording>(cliffRecording("cli"));
    const auto v100 = retargetRecording(*rec, TorchVersion{2, 1, 0}, std::string("V100"));
    QVERIFY(v100);
    QCOMPARE(v100->capability, (ComputeCapability{7, 0}));
    QCOMPARE(v100->cpu_threads, 2);  // the recorded one, as the CLI keeps it
    QVERIFY(!retargetRecording(*rec, std::nullopt, std::nullopt));
    QCOMPARE(retargetRecording(*rec, std::nullopt, std::string("cpu"))->version, (TorchVersion{2, 15, 0}));
    const ExplainedRecording e = explainRecording(rec, v100);
    const json j = recordingJson(*rec, v100);
    QCOMPARE(e.calls.size(), size_t{3});
    QCOMPARE(e.calls.front().call->row, int64_t{2});  // the largest measured first
    for (const ExplainedCall& c : e.calls) {
      const json& jc = j["calls"][static_cast<size_t>(c.call->row - 1)];
      QVERIFY(c.target);
      QCOMPARE(kernelChange(c.recorded, *c.target), jc["change"].get<std::string>());
      QCOMPARE(c.target->predicted, jc["target_kernel"].get<std::string>());
    }
  }

  void modelsUnderTheTester() {
    RecordingListModel list;
    QAbstractItemModelTester list_tester(&list, QAbstractItemModelTester::FailureReportingMode::QtTest);
    Store store(dir_.filePath("models.sqlite").toStdString());
    list.setStore(&store);
    const int64_t a = store.saveRecording(cliffRecording("a"));
    const int64_t b = store.saveRecording(cliffRecording("b"));
    list.setRecordings(store.recordings());
    QCOMPARE(list.rowCount(), 2);
    QCOMPARE(list.recordingIndex(a).data().toString(), QStringLiteral("REC%1").arg(a));
    QCOMPARE(list.recordingIndex(b, RecordingListModel::CallsColumn).data().toString(), QStringLiteral("9"));
    QCOMPARE(list.recordingIndex(b, RecordingListModel::ExitColumn).data().toString(), QStringLiteral("exit 0"));
    QVERIFY(list.recordingIndex(a).data(RecordingListModel::FilterRole).toString().contains("heads_cliff.py"));
    // Renamed in place and in the store; a listing made before the rename is seen to be older.
    const quint64 before = list.localChanges();
    QVERIFY(list.setData(list.recordingIndex(b, RecordingListModel::NameColumn), "renamed", Qt::EditRole));
    QVERIFY(list.localChanges() != before);
    QCOMPARE(store.recording(b)->name, std::string("renamed"));
    // Deleted elsewhere and another one added: the listing removes the one and adds the other.
    store.deleteRecording(a);
    const int64_t c = store.saveRecording(cliffRecording("c"));
    list.setRecordings(store.recordings());
    QCOMPARE(list.rowCount(), 2);
    QVERIFY(!list.recordingIndex(a).isValid());
    QVERIFY(list.recordingIndex(c).isValid());
    QCOMPARE(list.recordingIndex(b, RecordingListModel::NameColumn).data().toString(), QStringLiteral("renamed"));
    QVERIFY(list.deleteRecordings({b}));
    QCOMPARE(list.rowCount(), 1);
    QVERIFY(store.recordings().size() == 1);

    RecordedCallsModel calls;
    QAbstractItemModelTester calls_tester(&calls, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto rec = std::make_shared<const Recording>(*store.recording(c));
    calls.setRecording(std::make_shared<const ExplainedRecording>(explainRecording(rec, std::nullopt)));
    QCOMPARE(calls.rowCount(), 3);
    QVERIFY(calls.columnSaysNothing(RecordedCallsModel::KvShapeColumn));
    QVERIFY(calls.columnSaysNothing(RecordedCallsModel::BackwardColumn));
    QVERIFY(calls.columnSaysNothing(RecordedCallsModel::TargetColumn));
    QVERIFY(!calls.columnSaysNothing(RecordedCallsModel::PredictedColumn));
    QCOMPARE(calls.index(0, RecordedCallsModel::MeasuredColumn).data(Qt::EditRole).toLongLong(), qlonglong{5000});
    QCOMPARE(calls.index(0, RecordedCallsModel::MeasuredColumn).data().toString(), QString::fromStdString(formatBytes(5000)));
    calls.setRecording(nullptr);
    QCOMPARE(calls.rowCount(), 0);
  }

  // The dock's sweeps follow a listing of the store as other connections change it.
  void sweepTreeFollowsAListing() {
    const std::string db = dir_.filePath("listing.sqlite").toStdString();
    Store mine(db);
    const int64_t first = ui::test::runSweepInto(mine, ui::test::tinySweep());
    SweepTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(&mine);
    model.fetchMore(model.sweepIndex(first));
    QCOMPARE(model.rowCount(model.sweepIndex(first)), 8);

    Store other(db, StoreMode::existing);
    auto spec = ui::test::tinySweep();
    spec.name = "from the CLI";
    spec.axes = {{"heads", {"4"}}};
    const int64_t second = ui::test::runSweepInto(other, spec);
    const int64_t gone = other.runs(first).front().id;
    other.deleteRun(gone);
    model.updateSweeps(other.sweeps());
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.sweepIndex(second, SweepTreeModel::NameColumn).data().toString(), QStringLiteral("from the CLI"));
    // The expanded sweep read its runs again: the deleted one is gone, the rest stay.
    QCOMPARE(model.rowCount(model.sweepIndex(first)), 7);
    QVERIFY(!model.runIndex(first, gone).isValid());
    other.deleteSweep(first);
    model.updateSweeps(other.sweeps());
    QCOMPARE(model.rowCount(), 1);
    QVERIFY(!model.sweepIndex(first).isValid());
  }

  // A commit by another connection is heard; a reader opening the database, as the window's own
  // listing does, is not (as root SQLite fchowns the -wal on each open, which notifies like a
  // write: a listing would set off the next, forever).
  void watcherHearsCommitsNotReads() {
    const QString db = dir_.filePath("watched.sqlite");
    Store mine(db.toStdString());
    mine.saveRecording(cliffRecording("first"));
    StoreWatcher watcher;
    QSignalSpy changed(&watcher, &StoreWatcher::changed);
    watcher.setDatabase(db);
    Store(db.toStdString(), StoreMode::read).recordings();
    QTest::qWait(StoreWatcher::kDelayMs * 3);
    QCOMPARE(changed.count(), 0);
    Store(db.toStdString(), StoreMode::existing).saveRecording(cliffRecording("second"));
    QVERIFY(changed.wait(5000));
    // A burst of commits is heard about once, not once per commit.
    changed.clear();
    for (int i = 0; i < 20; ++i) mine.renameRecording(1, "renamed " + std::to_string(i));
    QVERIFY(changed.wait(5000));
    QTest::qWait(StoreWatcher::kDelayMs * 2);
    QCOMPARE(changed.count(), 1);
  }

  void recordingInTheWindow() {
    const QString db = dir_.filePath("window.sqlite");
    int64_t rec = 0, sweep = 0;
    {
      Store store(db.toStdString());
      sweep = ui::test::runSweepInto(store, ui::test::tinySweep());
      rec = store.saveRecording(cliffRecording("heads_cliff.py"));
    }
    MainWindow w(db);
    w.setInteractive(false);
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));

    // Listed in the Runs dock (in the background), beside the sweep.
    QTreeView* list = w.runsPanel()->recordingsView();
    QTRY_COMPARE_WITH_TIMEOUT(list->model()->rowCount(), 1, 10000);
    QCOMPARE(w.runsPanel()->view()->model()->rowCount(), 1);
    QAbstractItemModelTester list_tester(w.recordingListModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const QModelIndex row = list->model()->index(0, RecordingListModel::IdColumn);
    QCOMPARE(row.data().toString(), QStringLiteral("REC%1").arg(rec));
    QCOMPARE(row.siblingAtColumn(RecordingListModel::NameColumn).data().toString(), QStringLiteral("heads_cliff.py"));
    QVERIFY(w.findChild<QLabel*>("recordingsLabel")->text().contains("1"));

    // Selecting it opens the Recording tab, one row per call, the largest measured first.
    const int chart_tab = w.tabs()->currentIndex();
    list->scrollTo(row);
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(row).center());
    QCOMPARE(w.runsPanel()->selectedRecordingIds(), std::vector<int64_t>{rec});
    QVERIFY(w.runsPanel()->selectedSweepIds().empty());
    RecordingView* view = w.recordingView();
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(view));
    QCOMPARE(view->recordingId(), rec);
    QTRY_VERIFY_WITH_TIMEOUT(!view->loading(), 20000);
    QAbstractItemModel* calls = view->callsView()->model();
    QAbstractItemModelTester calls_tester(view->callsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(calls->rowCount(), 3);
    QCOMPARE(viewRow(calls, 2), 0);
    QCOMPARE(viewRow(calls, 3), 1);
    QCOMPARE(viewRow(calls, 1), 2);
    QVERIFY(view->header()->text().contains(QStringLiteral("REC%1 'heads_cliff.py'").arg(rec)));
    QVERIFY(view->header()->text().contains("3 call signatures, 9 calls"));
    QCOMPARE(cell(calls, 2, RecordedCallsModel::QShapeColumn), QStringLiteral("[1,16,1024,4]"));
    QCOMPARE(cell(calls, 2, RecordedCallsModel::MaskColumn), QStringLiteral("bool [1,1,1024,1024] broadcast"));
    QCOMPARE(cell(calls, 2, RecordedCallsModel::RanColumn), QStringLiteral("flash"));
    QVERIFY(view->callsView()->isColumnHidden(RecordedCallsModel::TargetColumn));
    QVERIFY(view->callsView()->isColumnHidden(RecordedCallsModel::KvShapeColumn));
    // The kernel cells are tinted with the Dispatch view's colours.
    QVERIFY(calls->index(0, RecordedCallsModel::RanColumn).data(Qt::BackgroundRole).value<QColor>().isValid());

    // Torch ran math where the rules predict another kernel: WRONG, in red.
    const QModelIndex wrong = calls->index(viewRow(calls, 3), RecordedCallsModel::PredictedColumn);
    QVERIFY2(wrong.data().toString().endsWith("(WRONG)"), qPrintable(wrong.data().toString()));
    QCOMPARE(wrong.data(Qt::ForegroundRole).value<QColor>(), QColor(0xd0, 0x3a, 0x3a));
    QVERIFY(!calls->index(viewRow(calls, 2), RecordedCallsModel::PredictedColumn).data().toString().contains("WRONG"));

    // Explained for torch 2.1 on a V100: head_dim 4 falls back to math there.
    view->gpuBox()->setCurrentIndex(view->gpuBox()->findText("V100"));
    view->torchBox()->setCurrentIndex(view->torchBox()->findText("2.1.0"));
    QTRY_VERIFY_WITH_TIMEOUT(!view->loading(), 20000);
    QVERIFY(view->target());
    QVERIFY(!view->callsView()->isColumnHidden(RecordedCallsModel::TargetColumn));
    QVERIFY(view->header()->text().contains("explained for torch 2.1.0"));
    QVERIFY2(cell(calls, 2, RecordedCallsModel::TargetColumn).startsWith("math "), qPrintable(cell(calls, 2, RecordedCallsModel::TargetColumn)));
    QVERIFY2(cell(calls, 2, RecordedCallsModel::ChangeColumn).startsWith("flash -> math: +"),
             qPrintable(cell(calls, 2, RecordedCallsModel::ChangeColumn)));

    // A selected row: its verdicts in torch's order with the rules, the predicted buffers.
    // (On the change cell: choosing the target scrolled its columns into view.)
    const QModelIndex cliff = calls->index(viewRow(calls, 2), RecordedCallsModel::ChangeColumn);
    QVERIFY(view->callsView()->viewport()->rect().contains(view->callsView()->visualRect(cliff).center()));
    QTest::mouseClick(view->callsView()->viewport(), Qt::LeftButton, {}, view->callsView()->visualRect(cliff).center());
    const ExplainedCall* e = view->currentCall();
    QVERIFY(e && e->call->row == 2);
    QVERIFY(e->recorded.x && e->target && e->target->x);
    const QString detail = view->detail()->toPlainText();
    QVERIFY2(detail.contains(QStringLiteral("REC%1:2").arg(rec)), qPrintable(detail));
    QVERIFY(detail.contains("As recorded: torch 2.15.0"));
    QVERIFY(detail.contains("On target: torch 2.1.0"));
    QVERIFY(detail.contains("rejected by"));
    for (const KernelVerdict& k : e->target->x->verdicts) {
      QVERIFY(detail.contains(QString::fromUtf8(toString(k.kernel).data())));
      if (!k.usable) QVERIFY2(detail.contains(QString::fromStdString(k.rule)), k.rule.c_str());
    }
    for (const PlannedBuffer& b : e->recorded.x->memory.plan.buffers) {
      QVERIFY2(detail.contains(QString::fromStdString(b.name)), b.name.c_str());
      QVERIFY(detail.contains(QString::fromStdString(formatBytes(b.bytes))));
    }
    QVERIFY(detail.contains("cheaper with"));

    // Sweep this call: the Workload form holds the call, the Sweep dock's lists are empty.
    QVERIFY(view->sweepButton()->isEnabled());
    view->sweepButton()->click();
    const WorkloadSpec spec = w.workloadForm()->spec();
    QCOMPARE(spec.heads, int64_t{16});
    QCOMPARE(spec.head_dim, int64_t{4});
    QCOMPARE(spec.seq_q, int64_t{1024});
    QVERIFY(spec.dtype == DType::fp16);
    QVERIFY(spec.mask.kind == MaskKind::dense);
    QVERIFY(w.sweepPanel()->sweep().axes.empty());
    QCOMPARE(QString::fromStdString(w.sweepPanel()->sweep().name), QStringLiteral("from REC%1:2").arg(rec));

    QApplication::processEvents();
    QVERIFY(w.grab().save("/tmp/recording_view.png"));

    // What another connection writes, as `attnscope record` in a terminal does, appears in the
    // open window; so does its sweep.
    {
      Store other(db.toStdString(), StoreMode::existing);
      const int64_t cli = other.saveRecording(cliffRecording("made by the CLI"));
      QTRY_COMPARE_WITH_TIMEOUT(list->model()->rowCount(), 2, 10000);
      QVERIFY(w.recordingListModel()->recordingIndex(cli).isValid());
      auto s = ui::test::tinySweep();
      s.name = "cli sweep";
      s.axes = {{"heads", {"2"}}};
      const int64_t cli_sweep = ui::test::runSweepInto(other, s);
      QTRY_VERIFY_WITH_TIMEOUT(w.sweepTreeModel()->sweepIndex(cli_sweep).isValid(), 10000);
      // A shown sweep that another connection adds runs to is read again: the charts follow.
      const int64_t growing = other.createSweep(s, other.sweep(cli_sweep)->environment_id);
      w.showSweeps({growing});
      QCOMPARE(w.shownSweeps().front()->runs.size(), size_t{0});
      const auto cli_runs = other.runs(cli_sweep);
      QVERIFY(cli_runs.size() >= 2u);
      for (auto r : cli_runs) {
        r.uuid.clear();  // a run of its own, not the CLI sweep's again
        other.saveRun(growing, r);
      }
      QTRY_COMPARE_WITH_TIMEOUT(w.shownSweeps().front()->runs.size(), cli_runs.size(), 10000);
      QCOMPARE(w.shownSweeps().front()->info.id, growing);
      other.deleteRecording(cli);
      QTRY_COMPARE_WITH_TIMEOUT(list->model()->rowCount(), 1, 10000);
    }

    // Picking a sweep again shows the chart the recording was opened from.
    w.runsPanel()->selectSweep(sweep);
    QCOMPARE(w.tabs()->currentIndex(), chart_tab);
    QVERIFY(w.runsPanel()->selectedRecordingIds().empty());

    // Deleted like a sweep: from the store, the dock and the Recording tab.
    w.runsPanel()->selectRecording(rec);
    QCOMPARE(view->recordingId(), rec);
    w.runsPanel()->setConfirmDeletes(false);
    w.runsPanel()->deleteSelected();
    QCOMPARE(list->model()->rowCount(), 0);
    QCOMPARE(view->recordingId(), int64_t{0});
    QVERIFY(Store(db.toStdString(), StoreMode::read).recordings().empty());
    QVERIFY(w.findChild<QLabel*>("recordingsLabel")->text().contains("none yet"));
  }

 private:
  QTemporaryDir dir_;
};

ATTNSCOPE_UI_TEST_MAIN(TestRecordingView)
#include "test_recording_view.moc"
