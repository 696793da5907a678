// The Frontier tab: the classic report (width 64, fp16, a bool mask, torch 2.1 on a V100) as
// lines per kernel, computed off the GUI thread, the budget refused and highlighted when it is
// neither a size nor a known GPU, the hover naming the deciding buffer, and the synchronous path
// the report uses.

#include <QComboBox>
#include <QLabel>
#include <QSignalSpy>
#include <qcustomplot.h>

#include "ui/frontier_view.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

class TestFrontierView : public QObject {
  Q_OBJECT

  static SweepSpec classic() {
    SweepSpec s;
    s.base.width = 64;
    s.base.dtype = DType::fp16;
    s.base.mask = *parseMask("dense").mask;
    s.axes = {{"heads", {"4", "8", "16", "32"}}, {"seq", {"1024"}}};
    return s;
  }

  static const FrontierRow* row(const FrontierView& v, const std::string& name) {
    for (const auto& r : v.rows())
      if (r.line == name) return &r;
    return nullptr;
  }

 private slots:
  void classicReportInTheTab() {
    FrontierView v;
    v.resize(1200, 650);
    v.show();
    QSignalSpy computed(&v, &FrontierView::computed);
    v.torchBox()->setCurrentText("2.1.0");
    v.gpuBox()->setCurrentText("budget");
    v.budgetBox()->setCurrentText("V100");
    v.setPlannedSweep(classic());
    QTRY_VERIFY_WITH_TIMEOUT(!v.isComputing(), 30000);
    QCOMPARE(v.query().others, (std::vector<int64_t>{4, 8, 16, 32}));
    const FrontierRow* picks = row(v, "torch 2.1 V100 (picks)");
    QVERIFY(picks);
    QCOMPARE(picks->points[2].other, int64_t{16});
    QCOMPARE(picks->points[2].max, int64_t{15589});
    QCOMPARE(QString::fromStdString(picks->points[2].kernel_at_max), QString("math"));
    QCOMPARE(picks->points[1].max_aligned, int64_t{63776});
    QVERIFY(row(v, "cpu.flash"));
    const QString hover = v.pointText(static_cast<size_t>(picks - v.rows().data()), 16);
    QVERIFY2(hover.contains("seq up to 15,589 (math)") && hover.contains("deciding buffer: scores fp16 [B,H,L,S]"),
             qPrintable(hover));
    QVERIFY2(v.statusLabel()->text().contains("V100 16.0 GiB less 840 MiB reserve"), qPrintable(v.statusLabel()->text()));
    // One graph per line, points where something fits.
    QCustomPlot* plot = v.plots().front();
    QCOMPARE(plot->graphCount(), static_cast<int>(v.rows().size()));
    QVERIFY(plot->grab().save("/tmp/frontier_view.png"));

    // A budget that is neither a size nor a GPU: said, highlighted, nothing shown.
    v.budgetBox()->setCurrentText("K80");
    QTRY_VERIFY(!v.isComputing());
    QVERIFY(v.rows().empty());
    QVERIFY2(v.statusLabel()->text().contains("neither a size"), qPrintable(v.statusLabel()->text()));
    QVERIFY(v.budgetBox()->styleSheet().contains("border"));
    // A size; train; the synchronous path (the report's).
    v.budgetBox()->setCurrentText("64MiB");
    v.findChild<QComboBox*>("frontierPass")->setCurrentText("train");
    v.finishPending();
    QVERIFY(!v.isComputing());
    QVERIFY(v.budgetBox()->styleSheet().isEmpty());
    QCOMPARE(v.query().budget, int64_t{64} << 20);
    QVERIFY(v.query().spec.pass == Pass::train);
    QVERIFY(row(v, "cpu.reference") && row(v, "cpu.reference")->points[0].max > 0);
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestFrontierView)
#include "test_frontier_view.moc"
