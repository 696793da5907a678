// The Dispatch view offscreen: the grid follows the sweep being set up, cells carry the kernel
// torch would pick for the chosen version and GPU, and hover explains the refusals.
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QtTest>
#include <qcustomplot.h>

#include "core/torch_dispatch/dispatch_grid.h"
#include "ui/dispatch_view.h"
#include "ui/main_window.h"
#include "ui/sweep_panel.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

class TestDispatchView : public QObject {
  Q_OBJECT
 private:
  static SweepSpec cliffSweep() {
    SweepSpec s;
    s.base.width = 64;
    s.base.dtype = DType::fp16;
    s.base.mask = MaskSpec{MaskKind::dense};
    s.axes = {{"heads", {"4", "8", "16", "32"}}, {"seq", {"1024", "10000"}}, {"dtype", {"fp16", "fp32"}}};
    return s;
  }

 private Q_SLOTS:
  void gridFollowsThePlannedSweepAndTarget() {
    ui::DispatchView view;
    view.resize(900, 500);
    view.show();
    view.setPlannedSweep(cliffSweep());
    view.gpuBox()->setCurrentText("V100");
    QCOMPARE(view.xBox()->currentText(), QString("heads"));
    QCOMPARE(view.yBox()->currentText(), QString("seq"));
    const DispatchGrid& g = view.grid();
    QCOMPARE(g.xs.size(), size_t(4));
    QCOMPARE(g.ys.size(), size_t(2));
    // width 64: head_dim 16, 8 -> efficient; 4, 2 -> math (fp16 needs head_dim % 8 on sm70).
    QCOMPARE(g.at(1, 1).kernel, std::optional<SdpaKernel>(SdpaKernel::efficient));
    QCOMPARE(g.at(2, 1).kernel, std::optional<SdpaKernel>(SdpaKernel::math));
    QVERIFY(g.at(2, 1).peak_bytes > 10 * g.at(1, 1).peak_bytes);
    const QString tip = view.cellText(2, 1);
    QVERIFY2(tip.contains("torch would pick math"), qPrintable(tip));
    QVERIFY2(tip.contains("Mem efficient attention requires last dimension of inputs to be divisible by 8"), qPrintable(tip));
    QVERIFY(view.cellText(9, 9).isEmpty());
    // Another axis pair: dtype on y; fp32 needs head_dim % 1 on sm70, so 16 heads go back to efficient.
    view.yBox()->setCurrentText("dtype");
    QCOMPARE(view.grid().ys, (std::vector<std::string>{"fp16", "fp32"}));
    QCOMPARE(view.grid().at(2, 1).kernel, std::optional<SdpaKernel>(SdpaKernel::efficient));
    // The torch version changes the answer: 2.0 has no masked fused kernel at all.
    view.torchBox()->setCurrentText("2.0.0");
    QCOMPARE(view.grid().at(1, 0).kernel, std::optional<SdpaKernel>(SdpaKernel::math));
  }

  // The torch release as an axis: every covered release, each cell the explainer's answer for that
  // release's wheel; the torch box has nothing to choose then.
  void torchReleaseIsAnAxis() {
    ui::DispatchView view;
    view.setPlannedSweep(cliffSweep());
    view.gpuBox()->setCurrentText("V100");
    QVERIFY(view.yBox()->findText(kTorchAxis) >= 0);
    view.yBox()->setCurrentText(kTorchAxis);
    QVERIFY(!view.torchBox()->isEnabled());
    const DispatchGrid& g = view.grid();
    QCOMPARE(g.ys.size(), coveredTorchVersions().size());
    SweepSpec one = cliffSweep();
    for (size_t y = 0; y < g.ys.size(); ++y) {
      TorchTarget t = defaultTorchTarget(*parseTorchVersion(g.ys[y]), TorchDevice::cuda, {7, 0});
      WorkloadSpec s = one.base;
      s.heads = 8;
      s.seq_q = 1024;
      const SdpaExplanation x = explainSdpa(s, t, ExplainOptions{false});
      QCOMPARE(g.at(1, y).kernel, x.chosen);
      QCOMPARE(g.at(1, y).peak_bytes, x.chosen ? x.peakBytes() : 0);
      QVERIFY2(QString::fromStdString(g.at(1, y).summary).contains(QString::fromStdString(t.version.text())),
               g.at(1, y).summary.c_str());
    }
    // 2.0 has no masked fused kernel; 2.15 takes the bool mask on efficient at head_dim 8.
    QCOMPARE(g.at(1, 0).kernel, std::optional<SdpaKernel>(SdpaKernel::math));
    QCOMPARE(g.at(1, g.ys.size() - 1).kernel, std::optional<SdpaKernel>(SdpaKernel::efficient));
    view.yBox()->setCurrentText("seq");
    QVERIFY(view.torchBox()->isEnabled());
  }

  void unknownGpuIsReportedNotGuessed() {
    ui::DispatchView view;
    view.gpuBox()->setCurrentText("Voodoo2");
    QVERIFY(!view.target());
    QVERIFY(view.grid().cells.empty());
    QVERIFY(view.findChild<QLabel*>("dispatchStatus")->text().contains("Unknown GPU 'Voodoo2'"));
    view.gpuBox()->setCurrentText("cpu");
    QVERIFY(view.target() && view.target()->device == TorchDevice::cpu);
    QVERIFY(!view.grid().cells.empty());
  }

  void invalidCombinationsStayEmpty() {
    SweepSpec s;
    s.base.width = 64;
    s.axes = {{"heads", {"3", "8"}}, {"seq", {"128"}}};  // 64 is not divisible by 3
    const auto g = dispatchGrid(s, "heads", "seq", defaultTorchTarget(kNewestTorch, TorchDevice::cuda, {8, 0}));
    QVERIFY(!g.at(0, 0).invalid.empty());
    QVERIFY(!g.at(0, 0).kernel);
    QVERIFY(g.at(1, 0).kernel.has_value());
  }

  void mainWindowFeedsTheSweepBeingSetUp() {
    QTemporaryDir dir;
    ui::MainWindow w(dir.filePath("dispatch.sqlite"));
    w.setInteractive(false);
    w.resize(1400, 800);
    w.show();
    ui::DispatchView* view = w.findChild<ui::DispatchView*>();
    QVERIFY(view);
    int tab = -1;
    for (int i = 0; i < w.tabs()->count(); ++i)
      if (w.tabs()->tabText(i) == "Dispatch") tab = i;
    QVERIFY(tab >= 0);
    w.tabs()->setCurrentIndex(tab);
    // Typing heads into the Sweep dock changes the Dispatch grid.
    w.sweepPanel()->setAxisText("heads", "2,4,8");
    QTRY_COMPARE(view->grid().xs, (std::vector<std::string>{"2", "4", "8"}));
    QVERIFY(view->findChild<QLabel*>("dispatchStatus")->text().contains("the sweep being set up"));
    const QByteArray shots = qgetenv("ATTNSCOPE_SCREENSHOT_DIR");
    view->findChild<QCustomPlot*>("dispatchPlot")->replot();  // the view replots queued
    if (!shots.isEmpty()) QVERIFY(w.grab().save(QString::fromUtf8(shots) + "/dispatch-window.png"));
  }

  void screenshot() {
    // Rendered for the README (scripts run it with ATTNSCOPE_SCREENSHOT_DIR set); a plain test otherwise.
    const QByteArray dir = qgetenv("ATTNSCOPE_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("ATTNSCOPE_SCREENSHOT_DIR not set");
    ui::DispatchView view;
    view.resize(1100, 520);
    view.setPlannedSweep(cliffSweep());
    view.gpuBox()->setCurrentText("V100");
    view.torchBox()->setCurrentText("2.10.0");
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view) || true);
    view.findChild<QCustomPlot*>("dispatchPlot")->replot();
    QVERIFY(view.grab().save(QString::fromUtf8(dir) + "/dispatch.png"));
  }
};

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  static QTemporaryDir config;  // settings in a fresh folder, never the user's
  qputenv("XDG_CONFIG_HOME", config.path().toUtf8());
  qputenv("XDG_DATA_HOME", config.path().toUtf8());
  QApplication app(argc, argv);
  TestDispatchView t;
  return QTest::qExec(&t, argc, argv);
}

#include "test_dispatch_view.moc"
