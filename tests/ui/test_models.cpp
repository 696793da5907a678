// Every item model of the GUI under QAbstractItemModelTester, fed with a real store.

#include <QAbstractItemModelTester>
#include <QSignalSpy>

#include "core/result/environment.h"
#include "core/store/store.h"
#include "core/engine/sweep_runner.h"
#include "kernels/builtin_backends.h"
#include "ui/backend_list_model.h"
#include "ui/compare_model.h"
#include "ui/compare_view.h"
#include <qcustomplot.h>
#include <QComboBox>
#include "ui/results_table_model.h"
#include "ui/sweep_tree_filter.h"
#include "ui/sweep_tree_model.h"
#include "ui/sweep_snapshot.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

class TestModels : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    store_ = std::make_unique<Store>(dir_.filePath("models.sqlite").toStdString());
    sweep_ = test::runSweepInto(*store_, test::tinySweep());
    auto second = test::tinySweep();
    second.name = "second";
    second.axes = {{"heads", {"4"}}};
    test::runSweepInto(*store_, second);
  }

  void backendListModel() {
    BackendRegistry registry;
    registerBuiltinBackends(registry);
    BackendListModel model(registry);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), static_cast<int>(registry.all().size()));
    QVERIFY(model.rowCount() >= 2);
    // Every backend shows, with a mark and a detail line.
    for (int r = 0; r < model.rowCount(); ++r) {
      QVERIFY(!model.index(r).data().toString().isEmpty());
      QVERIFY(!model.index(r).data(Qt::DecorationRole).isNull());
      QVERIFY(!model.index(r).data(BackendListModel::DetailRole).toString().isEmpty());
    }
    WorkloadSpec spec;
    spec.heads = 4;
    spec.seq_q = 64;
    spec.head_dim = 16;
    model.setSpec(spec);
    const int ref = rowOf(model, "cpu.reference");
    QVERIFY(ref >= 0);
    QCOMPARE(model.index(ref).data(BackendListModel::StateRole).toInt(), int(BackendListModel::Supported));
    QVERIFY(model.setData(model.index(ref), Qt::Unchecked, Qt::CheckStateRole));
    const auto ids = model.checkedIds();
    QVERIFY(std::find(ids.begin(), ids.end(), "cpu.reference") == ids.end());
    model.setCheckedIds({"cpu.flash"});
    QCOMPARE(model.checkedIds(), std::vector<std::string>{"cpu.flash"});
  }

  void sweepTreeModel() {
    SweepTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store_.get());
    QCOMPARE(model.rowCount(), 2);
    const QModelIndex sweep = model.sweepIndex(sweep_);
    QVERIFY(sweep.isValid());
    QVERIFY(!sweep.parent().isValid());
    QCOMPARE(model.index(sweep.row(), SweepTreeModel::IdColumn).data().toString(), QString("S%1").arg(sweep_));
    QCOMPARE(model.index(sweep.row(), SweepTreeModel::NameColumn).data().toString(), QString("tiny"));
    QCOMPARE(model.index(sweep.row(), SweepTreeModel::PointsColumn).data(Qt::EditRole).toLongLong(), 8);
    QCOMPARE(model.index(sweep.row(), SweepTreeModel::PointsColumn).data().toString(), QString("8/8 ok"));

    // Runs are the sweep's children, in the store's order, read only when fetched: rowCount
    // and index never read the store.
    QVERIFY(model.hasChildren(sweep));
    const auto runs = store_->runs(sweep_);
    if (model.canFetchMore(sweep)) {
      QCOMPARE(model.rowCount(sweep), 0);
      QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
      model.fetchMore(sweep);
      QCOMPARE(inserted.size(), 1);
    }
    QVERIFY(!model.canFetchMore(sweep));
    QCOMPARE(model.rowCount(sweep), static_cast<int>(runs.size()));
    for (int r = 0; r < model.rowCount(sweep); ++r) {
      const RunResult& run = runs[static_cast<size_t>(r)];
      const QModelIndex child = model.index(r, SweepTreeModel::IdColumn, sweep);
      QCOMPARE(child.parent(), sweep);
      QCOMPARE(model.rowCount(child), 0);
      QCOMPARE(child.data().toString(), QString("R%1").arg(run.id));
      QCOMPARE(child.data(SweepTreeModel::RunIdRole).toLongLong(), run.id);
      QCOMPARE(child.data(SweepTreeModel::SweepIdRole).toLongLong(), sweep_);
      QCOMPARE(child.siblingAtColumn(SweepTreeModel::NameColumn).data().toString(),
               QString("H%1 L%2 %3").arg(run.spec.heads).arg(run.spec.seq_q).arg(QString::fromStdString(run.backend)));
      QVERIFY(child.siblingAtColumn(SweepTreeModel::NameColumn).data(Qt::DecorationRole).canConvert<QColor>());
      QCOMPARE(child.siblingAtColumn(SweepTreeModel::StateColumn).data().toString(), QString("ok"));
      QCOMPARE(child.siblingAtColumn(SweepTreeModel::PeakColumn).data(Qt::EditRole).toLongLong(), run.memory.measured_peak);
      QCOMPARE(child.siblingAtColumn(SweepTreeModel::SpecColumn).data().toString(), QString::fromStdString(summary(run.spec)));
      QVERIFY(child.data(Qt::ToolTipRole).toString().contains(QString::fromStdString(summary(run.spec))));
      QVERIFY(!(child.flags() & Qt::ItemIsEditable));
      QCOMPARE(model.runIndex(sweep_, run.id), child);
    }

    // Rename, tag and annotate go to the store; runs and state are read-only.
    QVERIFY(model.setData(model.index(sweep.row(), SweepTreeModel::NameColumn), "renamed", Qt::EditRole));
    QVERIFY(model.setData(model.index(sweep.row(), SweepTreeModel::TagsColumn), "cpu, small", Qt::EditRole));
    QVERIFY(model.setData(model.index(sweep.row(), SweepTreeModel::NotesColumn), "a note", Qt::EditRole));
    QVERIFY(!model.setData(model.index(sweep.row(), SweepTreeModel::StateColumn), "x", Qt::EditRole));
    QVERIFY(!model.setData(model.index(0, SweepTreeModel::NameColumn, sweep), "x", Qt::EditRole));
    auto info = store_->sweep(sweep_);
    QCOMPARE(QString::fromStdString(info->name), QString("renamed"));
    QCOMPARE(info->tags, (std::vector<std::string>{"cpu", "small"}));
    QCOMPARE(QString::fromStdString(info->notes), QString("a note"));
    model.reload();
    QCOMPARE(model.sweepIndex(sweep_, SweepTreeModel::TagsColumn).data().toString(), QString("cpu, small"));
  }

  void sweepTreeFilter() {
    SweepTreeModel model;
    model.setStore(store_.get());
    // What the Runs dock does before it filters on run names. Before the proxy is attached: the
    // proxy's model tester asks for more while it checks the proxy's own reset, and a fetch then
    // would insert rows inside that reset (a real view fetches later, when it lays out).
    model.fetchAll();
    SweepTreeFilter proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    // A sweep's own text matches: the sweep with all its runs.
    proxy.setFilterFixedString("small");
    QCOMPARE(proxy.rowCount(), 1);
    QCOMPARE(proxy.index(0, 0).data(SweepTreeModel::SweepIdRole).toLongLong(), sweep_);
    QCOMPARE(proxy.rowCount(proxy.index(0, 0)), 8);
    // Only runs match: every sweep with such runs, showing just those runs.
    proxy.setFilterFixedString("cpu.flash");
    QCOMPARE(proxy.rowCount(), 2);
    for (int r = 0; r < proxy.rowCount(); ++r) {
      const QModelIndex s = proxy.index(r, 0);
      QVERIFY(proxy.rowCount(s) > 0);
      QCOMPARE(proxy.rowCount(s) * 2, model.rowCount(proxy.mapToSource(s)));
      for (int c = 0; c < proxy.rowCount(s); ++c)
        QVERIFY(proxy.index(c, SweepTreeModel::NameColumn, s).data().toString().endsWith(" cpu.flash"));
    }
    // A run by its id (the filter text has one field a line): only its sweep, only that run.
    const int64_t run_id = store_->runs(sweep_).front().id;
    proxy.setFilterRegularExpression(QRegularExpression(QString("^R%1$").arg(run_id), QRegularExpression::MultilineOption));
    QCOMPARE(proxy.rowCount(), 1);
    QCOMPARE(proxy.rowCount(proxy.index(0, 0)), 1);
    QCOMPARE(proxy.index(0, 0, proxy.index(0, 0)).data(SweepTreeModel::RunIdRole).toLongLong(), run_id);
    proxy.setFilterFixedString("no such thing");
    QCOMPARE(proxy.rowCount(), 0);
    proxy.setFilterFixedString({});
    QCOMPARE(proxy.rowCount(), 2);
    // Sorting by id: sweeps newest first, a sweep's runs in the order they ran; ascending,
    // both ascending.
    auto run_id_at = [&](int sweep_row, int run_row) {
      return proxy.index(run_row, 0, proxy.index(sweep_row, 0)).data(SweepTreeModel::RunIdRole).toLongLong();
    };
    proxy.sort(SweepTreeModel::IdColumn, Qt::DescendingOrder);
    QVERIFY(proxy.index(0, 0).data(SweepTreeModel::SweepIdRole).toLongLong() > proxy.index(1, 0).data(SweepTreeModel::SweepIdRole).toLongLong());
    QCOMPARE(proxy.index(1, 0).data(SweepTreeModel::SweepIdRole).toLongLong(), sweep_);
    QVERIFY(run_id_at(1, 0) < run_id_at(1, 1));
    proxy.sort(SweepTreeModel::IdColumn, Qt::AscendingOrder);
    QCOMPARE(proxy.index(0, 0).data(SweepTreeModel::SweepIdRole).toLongLong(), sweep_);
    QVERIFY(run_id_at(0, 0) < run_id_at(0, 1));
    // By peak: the runs of a sweep by their measured peak.
    proxy.sort(SweepTreeModel::PeakColumn, Qt::DescendingOrder);
    const QModelIndex tiny = proxy.mapFromSource(model.sweepIndex(sweep_));
    for (int r = 1; r < proxy.rowCount(tiny); ++r)
      QVERIFY(proxy.index(r - 1, SweepTreeModel::PeakColumn, tiny).data(Qt::EditRole).toLongLong() >=
              proxy.index(r, SweepTreeModel::PeakColumn, tiny).data(Qt::EditRole).toLongLong());
  }

  void runsAppearWhileSweepRuns() {
    // The window's path: the sweep row appears when the worker starts, each finished run as
    // a child, the point count follows; under a filter that hides the other sweeps.
    SweepTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store_.get());
    model.fetchAll();  // before the proxy's tester, as in sweepTreeFilter
    SweepTreeFilter proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    proxy.setFilterFixedString("cpu.reference");
    const int before = model.rowCount();
    BackendRegistry registry;
    registerBuiltinBackends(registry);
    auto spec = test::tinySweep();
    spec.name = "live";
    const int64_t id = store_->createSweep(spec, store_->saveEnvironment(captureEnvironment()));
    model.refreshSweep(id);
    QCOMPARE(model.rowCount(), before + 1);
    const QModelIndex sweep = model.sweepIndex(id);
    QCOMPARE(sweep.siblingAtColumn(SweepTreeModel::StateColumn).data().toString(), QString("running"));
    int seen = 0;
    SweepCallbacks cb;
    cb.result = [&](RunResult& r) {
      r.id = store_->saveRun(id, r);
      model.addRun(id, r);
      model.addRun(id, r);  // a run the store read already held is not added twice
      ++seen;
      QCOMPARE(model.rowCount(model.sweepIndex(id)), seen);
      QCOMPARE(model.sweepIndex(id, SweepTreeModel::PointsColumn).data(Qt::EditRole).toLongLong(), seen);
    };
    SweepRunner(registry).run(spec, cb);
    QCOMPARE(seen, 8);
    store_->setSweepState(id, "finished");
    model.refreshSweep(id);
    QCOMPARE(model.sweepIndex(id, SweepTreeModel::StateColumn).data().toString(), QString("finished"));
    // A sweep submitted to Slurm shows its tasks as last seen, in the column and the tooltip.
    store_->setSweepCluster(id, {{"scheduler", "slurm"}}, "submitted");
    store_->saveSlurmTasks(id, {{"7", 0, "0-3", "/s/7_0.sqlite", "COMPLETED", "00:00:04", true},
                                {"7", 1, "4-5", "/s/7_1.sqlite", "PENDING", "", false},
                                {"7", 2, "6-7", "/s/7_2.sqlite", "PENDING", "", false}});
    model.refreshSweep(id);
    QCOMPARE(model.sweepIndex(id, SweepTreeModel::StateColumn).data().toString(),
             QString("submitted (1 COMPLETED, 2 PENDING)"));
    QVERIFY(model.sweepIndex(id).data(Qt::ToolTipRole).toString().contains("attnscope slurm status S"));
    const QModelIndex shown = proxy.mapFromSource(model.sweepIndex(id));
    QVERIFY(shown.isValid());
    QCOMPARE(proxy.rowCount(shown), 4);  // the cpu.reference half
    QVERIFY(model.deleteSweeps({id}));
  }

  void deleteRunAndSweep() {
    auto extra = test::tinySweep();
    extra.name = "to delete";
    extra.axes = {{"heads", {"1"}}, {"seq", {"8"}}};
    const int64_t id = test::runSweepInto(*store_, extra);
    SweepTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store_.get());
    model.fetchAll();  // before the proxy's tester, as in sweepTreeFilter
    SweepTreeFilter proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    proxy.sort(SweepTreeModel::IdColumn, Qt::DescendingOrder);
    const int before = model.rowCount();
    const QModelIndex sweep = model.sweepIndex(id);
    QCOMPARE(model.rowCount(sweep), 2);
    const int64_t run = model.index(0, 0, sweep).data(SweepTreeModel::RunIdRole).toLongLong();
    QVERIFY(model.deleteRuns({run}));
    QVERIFY(!store_->run(run, false));
    QCOMPARE(model.rowCount(model.sweepIndex(id)), 1);
    QVERIFY(!model.runIndex(id, run).isValid());
    QCOMPARE(model.sweepIndex(id, SweepTreeModel::PointsColumn).data(Qt::EditRole).toLongLong(), 1);
    QCOMPARE(store_->sweep(id)->run_count, 1);
    QVERIFY(model.deleteSweeps({id}));
    QCOMPARE(model.rowCount(), before - 1);
    QVERIFY(!model.sweepIndex(id).isValid());
    QVERIFY(!store_->sweep(id));
    // A store error is reported, not thrown.
    QSignalSpy errors(&model, &SweepTreeModel::storeError);
    QVERIFY(!model.deleteRuns({run}));
    QCOMPARE(errors.count(), 1);
  }

  void resultsTableModel() {
    ResultsTableModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto snap = loadSweepSnapshot(*store_, sweep_);
    QVERIFY(snap);
    model.setSweeps({snap});
    QCOMPARE(model.rowCount(), 8);
    for (int r = 0; r < model.rowCount(); ++r) {
      QCOMPARE(model.index(r, ResultsTableModel::StatusColumn).data().toString(), QString("ok"));
      QCOMPARE(model.index(r, ResultsTableModel::MeasuredColumn).data(Qt::EditRole).toLongLong(),
               static_cast<qlonglong>(snap->runs[static_cast<size_t>(r)].memory.measured_peak));
    }
    model.setSweeps({});
    QCOMPARE(model.rowCount(), 0);
  }

  void compareModel() {
    CompareModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    auto a = loadSweepSnapshot(*store_, sweep_);
    const auto sweeps = store_->sweeps();
    SweepSnapshotPtr b;
    for (const auto& s : sweeps)
      if (s.name == "second") b = loadSweepSnapshot(*store_, s.id);
    QVERIFY(a && b);
    model.setSweeps({a, b});
    // Points match on backend and the swept fields (heads, seq): tiny's 8 points (heads 1, 2 x
    // seq 16, 32) and second's 2 (heads 4 at the base seq 1024) share none: 10 rows.
    QCOMPARE(model.rowCount(), 10);
    QCOMPARE(model.columnCount(), 1 + 2 * 3 + 3);
    model.setSweeps({a, a});
    QCOMPARE(model.rowCount(), 8);
    for (int r = 0; r < model.rowCount(); ++r) {
      QCOMPARE(model.index(r, 7).data(CompareModel::RawRole).toDouble(), 1.0);  // same sweep: B/A = 1
      QCOMPARE(model.index(r, 7).data().toString(), QString("1.00\u00d7"));
      // The Point column sorts in point order: heads 1 before 2 within a backend, whatever the text.
      QCOMPARE(model.index(r, 0).data(CompareModel::RawRole).toInt(), r);
    }
    QCOMPARE(model.index(0, 0).data().toString(), QString("cpu.reference heads=1 seq=16"));
    model.setSweeps({});
    QCOMPARE(model.rowCount(), 0);

    // Wider heads: every point pairs, B needs more. Columns: Point, A (peak, median, status),
    // B (the same), peak B/A, peak B - A, time B/A.
    SweepSpec wider = test::tinySweep();
    wider.name = "wider";
    wider.base.head_dim = 16;
    auto w = loadSweepSnapshot(*store_, test::runSweepInto(*store_, wider));
    model.setSweeps({a, w});
    QCOMPARE(model.rowCount(), 8);
    QCOMPARE(model.headerData(8, Qt::Horizontal, Qt::DisplayRole).toString(), QString("peak wider \u2212 ") + QString::fromStdString(a->info.name));
    for (int r = 0; r < model.rowCount(); ++r) {
      const qlonglong pa = model.index(r, 1).data(CompareModel::RawRole).toLongLong();
      const qlonglong pb = model.index(r, 4).data(CompareModel::RawRole).toLongLong();
      QCOMPARE(model.index(r, 8).data(CompareModel::RawRole).toLongLong(), pb - pa);
      QVERIFY(pb > pa);
      QVERIFY(model.index(r, 8).data().toString().startsWith("+"));
      QCOMPARE(model.index(r, 7).data(CompareModel::RawRole).toDouble(), double(pb) / double(pa));
    }
    // The Compare tab's baseline: choosing the wider sweep as A turns every ratio over.
    CompareView view;
    view.setSweeps({a, w});
    const double before = view.model()->index(0, 7).data(CompareModel::RawRole).toDouble();
    QVERIFY(before > 1);
    view.baselineBox()->setCurrentIndex(1);
    QCOMPARE(view.model()->headerData(7, Qt::Horizontal, Qt::DisplayRole).toString(), "peak " + QString::fromStdString(a->info.name) + " / wider");
    QVERIFY(std::abs(view.model()->index(0, 7).data(CompareModel::RawRole).toDouble() * before - 1) < 1e-12);
    QVERIFY(view.model()->index(0, 8).data().toString().startsWith("\u2212"));
    // The ratio chart marks points, it does not join different workloads with lines.
    for (int g = 0; g < view.ratioPlot()->graphCount(); ++g)
      if (view.ratioPlot()->graph(g)->name().contains(" / ") && view.ratioPlot()->graph(g)->dataCount() > 0)
        QCOMPARE(view.ratioPlot()->graph(g)->lineStyle(), QCPGraph::lsNone);
  }

 private:
  static int rowOf(const BackendListModel& m, const QString& id) {
    for (int r = 0; r < m.rowCount(); ++r)
      if (m.index(r).data().toString() == id) return r;
    return -1;
  }
  QTemporaryDir dir_;
  std::unique_ptr<Store> store_;
  int64_t sweep_ = 0;
};

ATTNSCOPE_UI_TEST_MAIN(TestModels)
#include "test_models.moc"
