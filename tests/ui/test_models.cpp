// Every item model of the GUI under QAbstractItemModelTester, fed with a real store.

#include <QAbstractItemModelTester>
#include <QSortFilterProxyModel>

#include "core/store.h"
#include "kernels/builtin_backends.h"
#include "ui/backend_list_model.h"
#include "ui/compare_model.h"
#include "ui/results_table_model.h"
#include "ui/sweep_list_model.h"
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

  void sweepListModel() {
    SweepListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store_.get());
    QCOMPARE(model.rowCount(), 2);
    const int row = model.rowOf(sweep_);
    QVERIFY(row >= 0);
    QCOMPARE(model.index(row, SweepListModel::NameColumn).data().toString(), QString("tiny"));
    QCOMPARE(model.index(row, SweepListModel::RunsColumn).data(Qt::EditRole).toLongLong(), 8);
    // Rename, tag and annotate go to the store.
    QVERIFY(model.setData(model.index(row, SweepListModel::NameColumn), "renamed", Qt::EditRole));
    QVERIFY(model.setData(model.index(row, SweepListModel::TagsColumn), "cpu, small", Qt::EditRole));
    QVERIFY(model.setData(model.index(row, SweepListModel::NotesColumn), "a note", Qt::EditRole));
    QVERIFY(!model.setData(model.index(row, SweepListModel::StateColumn), "x", Qt::EditRole));
    auto info = store_->sweep(sweep_);
    QCOMPARE(QString::fromStdString(info->name), QString("renamed"));
    QCOMPARE(info->tags, (std::vector<std::string>{"cpu", "small"}));
    QCOMPARE(QString::fromStdString(info->notes), QString("a note"));
    model.reload();
    QCOMPARE(model.index(model.rowOf(sweep_), SweepListModel::TagsColumn).data().toString(), QString("cpu, small"));

    // Filtering and sorting through the proxy the Runs dock uses.
    QSortFilterProxyModel proxy;
    QAbstractItemModelTester proxy_tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    proxy.setSourceModel(&model);
    proxy.setFilterKeyColumn(-1);
    proxy.setFilterFixedString("small");
    QCOMPARE(proxy.rowCount(), 1);
    proxy.setFilterFixedString({});
    proxy.sort(SweepListModel::IdColumn, Qt::DescendingOrder);
    QVERIFY(proxy.index(0, 0).data(SweepListModel::SweepIdRole).toLongLong() > proxy.index(1, 0).data(SweepListModel::SweepIdRole).toLongLong());
  }

  void deleteSweep() {
    auto extra = test::tinySweep();
    extra.name = "to delete";
    extra.axes = {{"heads", {"1"}}, {"seq", {"8"}}};
    const int64_t id = test::runSweepInto(*store_, extra);
    SweepListModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setStore(store_.get());
    const int before = model.rowCount();
    QVERIFY(model.deleteSweeps({id}));
    QCOMPARE(model.rowCount(), before - 1);
    QVERIFY(!store_->sweep(id));
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
    QCOMPARE(model.columnCount(), 1 + 2 * 3 + 2);
    model.setSweeps({a, a});
    QCOMPARE(model.rowCount(), 8);
    for (int r = 0; r < model.rowCount(); ++r) {
      QCOMPARE(model.index(r, 7).data(CompareModel::RawRole).toDouble(), 0.0);  // same sweep: no change
      QCOMPARE(model.index(r, 7).data().toString(), QString("+0.0%"));
    }
    model.setSweeps({});
    QCOMPARE(model.rowCount(), 0);
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
