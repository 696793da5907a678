// The done-when of the torch backends in the desktop application: the Python comes from the GUI's
// setting, the torch backends turn available when the background probe answers (the GUI thread
// never waits for it), and a sweep of torch.cpu.auto, torch.cpu.math and cpu.flash over heads x
// seq runs on the worker thread and stores torch's measured memory beside the prediction, with the
// kernel torch ran. With ATTNSCOPE_TORCH_SCREENSHOT_DIR set it also saves screenshots.
#include <QComboBox>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QtTest>

#include "core/store/store.h"
#include "ui/backend_list_model.h"
#include "ui/compare_model.h"
#include "ui/compare_view.h"
#include "core/torch_dispatch/torch_target.h"
#include "ui/dispatch_view.h"
#include "ui/main_window.h"
#include "ui/python_dialog.h"
#include "ui/results_table_model.h"
#include "ui/sweep_panel.h"
#include "ui/sweep_snapshot.h"
#include "ui_test_support.h"
#include "ui/workload_form.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

const char* testPython() { return std::getenv("ATTNSCOPE_TEST_PYTHON"); }

int rowOf(BackendListModel* m, const QString& id) {
  for (int i = 0; i < m->rowCount(); ++i)
    if (m->index(i).data(BackendListModel::IdRole).toString() == id) return i;
  return -1;
}

void save(QWidget& w, const QString& name) {
  const QString dir = qEnvironmentVariable("ATTNSCOPE_TORCH_SCREENSHOT_DIR");
  if (dir.isEmpty()) return;
  QDir().mkpath(dir);
  for (int i = 0; i < 5; ++i) {
    QApplication::processEvents();
    QThread::msleep(30);
  }
  w.grab().save(QDir(dir).filePath(name));
}

}  // namespace

class TorchGuiTest : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void sweepTorchBesideOurs() {
    {  // Settings > Python confirms the interpreter before it is kept.
      PythonDialog dlg(QString::fromLocal8Bit(testPython()));
      QTRY_VERIFY_WITH_TIMEOUT(!dlg.checking(), 120000);
      QVERIFY2(dlg.result().startsWith("found torch 2.") && dlg.result().contains(QString::fromLocal8Bit(testPython())),
               qPrintable(dlg.result()));  // "(CUDA 13.2)" for the PyPI wheel, "(CPU build)" for a +cpu one
    }
    QSettings().setValue("torch/python", QString::fromLocal8Bit(testPython()));
    const QString db = dir_.filePath("torch.sqlite");
    MainWindow w(db);
    w.setInteractive(false);
    w.resize(1680, 1000);
    w.show();
    BackendListModel* model = w.backendModel();
    const int autoRow = rowOf(model, "torch.cpu.auto"), cudaRow = rowOf(model, "torch.cuda.auto");
    QVERIFY(autoRow >= 0 && cudaRow >= 0);
    // The probe answers in the background; the dock re-checks itself when it does.
    QTRY_VERIFY_WITH_TIMEOUT(model->index(autoRow).data(BackendListModel::StateRole).toInt() ==
                                 BackendListModel::Supported,
                             240000);
    QVERIFY(model->index(cudaRow).data(BackendListModel::DetailRole).toString().contains("CUDA is not available in torch"));

    WorkloadForm* form = w.workloadForm();
    QVERIFY(form->setFieldText("batch", "1"));
    QVERIFY(form->setFieldText("head_dim", "64"));
    QVERIFY(form->setFieldText("mask", "none"));
    model->setCheckedIds({"torch.cpu.auto", "torch.cpu.math", "cpu.flash"});
    w.sweepPanel()->setAxisText("heads", "2, 4");
    w.sweepPanel()->setAxisText("seq", "256, 512");
    w.sweepPanel()->setAxisText("other", "");
    w.sweepPanel()->findChild<QSpinBox*>("sweepReps")->setValue(1);
    QCOMPARE(static_cast<int>(w.sweepPanel()->sweep().pointCount()), 12);
    QVERIFY(model->index(autoRow).data(BackendListModel::DetailRole).toString().contains("torch would pick flash"));
    save(w, "torch-backends-dock.png");

    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    w.runAction()->trigger();
    QVERIFY(w.isRunning());
    QVERIFY(finished.wait(600000));
    QCOMPARE(finished.front().at(1).toString(), QString("finished"));
    const int64_t id = finished.front().at(0).toLongLong();

    Store store(db.toStdString(), StoreMode::existing);
    const auto runs = store.runs(id);
    QCOMPARE(static_cast<int>(runs.size()), 12);
    for (const auto& r : runs) {
      QVERIFY2(r.status == RunStatus::ok, (r.backend + ": " + r.message).c_str());
      if (r.backend == "cpu.flash") continue;
      QCOMPARE(QString::fromStdString(r.facts.at("torch.ran")), r.backend == "torch.cpu.math" ? QString("math") : QString("flash"));
      QVERIFY(r.memory.predicted_peak > 0);
      QVERIFY2(std::llabs(r.memory.measured_peak - r.memory.predicted_peak) <= 1024, r.backend.c_str());
      QVERIFY(store.events(r.id).size() > 10);  // the profiler's ops and allocations: the Timeline has a trace
    }
    save(w, "torch-memory.png");
    for (int i = 0; i < w.tabs()->count(); ++i) {
      if (w.tabs()->tabText(i) == "Results") {
        w.tabs()->setCurrentIndex(i);
        save(w, "torch-results.png");
      }
    }
    bool noted = false;
    auto* table = w.findChild<QTableView*>("resultsView");
    for (int row = 0; table && row < table->model()->rowCount(); ++row)
      noted |= table->model()->index(row, ResultsTableModel::RanColumn).data().toString() == "math";
    QVERIFY(noted);

    // The Dispatch view predicts for the sweep just shown, on the installed torch and the CPU,
    // and says in each cell what torch really ran there: flash, as predicted.
    w.showSweeps({id});
    auto* dispatch = w.findChild<DispatchView*>();
    QVERIFY(dispatch);
    const std::string installed = runs.back().facts.count("torch") ? runs.back().facts.at("torch") : "";
    for (const auto& r : runs)
      if (r.facts.count("torch")) QVERIFY(torch_dispatch::parseTorchVersion(r.facts.at("torch")));
    QCOMPARE(dispatch->gpuBox()->currentText(), QString("cpu"));
    QVERIFY2(QString::fromStdString(installed).startsWith(dispatch->torchBox()->currentText()),
             qPrintable(dispatch->torchBox()->currentText() + " vs " + QString::fromStdString(installed)));
    QCOMPARE(dispatch->grid().xs, (std::vector<std::string>{"2", "4"}));
    int ran_cells = 0;
    for (size_t x = 0; x < dispatch->grid().xs.size(); ++x)
      for (size_t y = 0; y < dispatch->grid().ys.size(); ++y) {
        QCOMPARE(dispatch->ranIn(x, y), QString("flash"));
        QVERIFY(dispatch->cellText(double(x), double(y)).contains("torch ran flash"));
        QVERIFY(dispatch->cellText(double(x), double(y)).contains("as predicted"));
        ++ran_cells;
      }
    QCOMPARE(ran_cells, 4);

    // Compare (the sweep against itself) shows the kernel torch ran per point and the torch
    // environment the runs saw, as `attnscope compare` does.
    const SweepSnapshots pair{loadSweepSnapshot(store, id), loadSweepSnapshot(store, id)};
    CompareView compare;
    compare.setSweeps(pair);
    auto* compared = compare.findChild<CompareModel*>();
    QVERIFY(compared);
    bool ran_shown = false;
    for (int row = 0; row < compared->rowCount(); ++row)
      for (int col = 0; col < compared->columnCount(); ++col)
        ran_shown |= compared->index(row, col).data().toString() == "ok, torch ran: math";
    QVERIFY(ran_shown);
    auto* env = compare.findChild<QTableView*>("environmentTable");
    QVERIFY(env);
    bool torch_row = false;
    for (int row = 0; row < env->model()->rowCount(); ++row)
      torch_row |= env->model()->headerData(row, Qt::Vertical).toString() == "torch run: torch" &&
                   !env->model()->index(row, 0).data().toString().isEmpty();
    QVERIFY(torch_row);
  }
};

int main(int argc, char** argv) {
  if (!testPython() || !*testPython()) {
    std::printf("skipped: ATTNSCOPE_TEST_PYTHON is not set (bash scripts/torch-venv.sh prints a Python with torch)\n");
    return 77;
  }
  qunsetenv("ATTNSCOPE_PYTHON");  // the GUI's setting must be what chooses the Python here
  attnscope::ui::test::prepareEnvironment();
  QApplication app(argc, argv);
  app.setAttribute(Qt::AA_Use96Dpi, true);
  TorchGuiTest tc;
  return QTest::qExec(&tc, argc, argv);
}
#include "test_torch_gui.moc"
