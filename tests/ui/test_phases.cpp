// Issue 12's views on real training runs: two sweeps run by the real engine on cpu.reference and
// cpu.flash into a real SQLite file (train x checkpoint none/attention, and forward vs train).
// The Breakdown view's phase table and bars are core's phase summary of the stored trace (the
// numbers `attnscope show R --phases` prints), loaded on a pool thread in the window's mode; the
// Memory view has one series per backend, pass and checkpoint with the stored peaks; the PDF
// report carries the phase tables.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QComboBox>
#include <QProcess>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTextDocument>
#include <QtMath>
#include <QThread>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "core/trace/phase_summary.h"
#include "core/store/store.h"
#include "core/spec/sweep_spec.h"
#include "ui/breakdown_view.h"
#include "ui/memory_view.h"
#include "ui/phase_summaries.h"
#include "ui/plot_layout.h"
#include "ui/report_writer.h"
#include "ui/series_builder.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

class TestPhases : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("train.sqlite").toStdString();
    Store store(db_);
    SweepSpec train = test::tinySweep();
    train.name = "train";
    setField(train.base, "pass", "train");
    train.axes.push_back({"checkpoint", {"none", "attention"}});
    train_ = loadSweepSnapshot(store, test::runSweepInto(store, train));
    SweepSpec passes = test::tinySweep();
    passes.name = "passes";
    passes.axes.push_back({"pass", {"forward", "train"}});
    passes_ = loadSweepSnapshot(store, test::runSweepInto(store, passes));
    SweepSpec layer = test::tinySweep();
    layer.name = "layer";
    setField(layer.base, "kind", "layer");
    setField(layer.base, "pass", "train");
    layer_ = loadSweepSnapshot(store, test::runSweepInto(store, layer));
    QVERIFY(train_ && passes_ && layer_);
    QCOMPARE(train_->runs.size(), size_t{16});
    for (const auto& snap : {train_, passes_, layer_})
      for (const RunResult& r : snap->runs) QVERIFY2(r.status == RunStatus::ok, qPrintable(QString::fromStdString(r.message)));
  }

  // First: it forks, and a child forked after the other tests started pool threads would wait on
  // threads that were not copied into it.
  void aSignalWhileTheReportIsDrawnRemovesItsTemporary() {
    // The window's report export: SIGTERM arrives while the PDF is drawn (from the trace loader of
    // the phase tables, once the PDF's temporary exists); the temporary goes, then the process
    // ends by that signal.
    QTemporaryDir out;
    const QString pdf = out.filePath("attnscope-report.pdf");
    const auto entries = [&] { return QDir(out.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot); };
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::signal(SIGTERM, SIG_DFL);  // as in the window (QTest catches it to print a backtrace)
      ::alarm(120);                // a stuck child fails the test by SIGALRM instead of hanging it
      const auto events = loader();
      bool sent = false;  // once: a second signal would end the process at once, by design
      writeReport({train_}, pdf, QString(), OutputRule::file, [&](int64_t id) {
        if (!sent && !entries().isEmpty()) {
          sent = true;
          ::raise(SIGTERM);
        }
        return events(id);
      });
      ::_exit(entries().isEmpty() ? 3 : 0);  // 3: the loader never ran while the PDF was drawn
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    QVERIFY2(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, qPrintable(QString("status %1").arg(status)));
    QCOMPARE(entries(), QStringList());
  }

  void breakdownTableIsCoresPhaseSummary() {
    BreakdownView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.setSweeps({train_});
    Store store(db_, StoreMode::read);
    bool backward = false;
    for (const RunResult& r : train_->runs) {
      view.selectRun(r.id);
      const std::vector<PhaseStats> want = summarizePhases(store.events(r.id));
      QVERIFY(!want.empty());
      QTableWidget* t = view.phaseTable();
      QCOMPARE(t->rowCount(), static_cast<int>(want.size()));
      for (int i = 0; i < t->rowCount(); ++i) {
        const PhaseStats& p = want[static_cast<size_t>(i)];
        const QStringList cells = phaseCells(p);  // the CLI's formatting
        for (int c = 0; c < cells.size(); ++c) QCOMPARE(t->item(i, c)->text(), cells[c]);
        QCOMPARE(t->item(i, 0)->data(Qt::UserRole).toString(), QString::fromStdString(p.name));
        QCOMPARE(t->item(i, 1)->data(Qt::UserRole).toLongLong(), p.count);
        QCOMPARE(t->item(i, 2)->data(Qt::UserRole).toLongLong(), p.total_ns);
        QCOMPARE(t->item(i, 3)->data(Qt::UserRole).toLongLong(), p.meanNs());
        QCOMPARE(t->item(i, 4)->data(Qt::UserRole).toDouble(), p.share);
        QCOMPARE(t->item(i, 5)->data(Qt::UserRole).toLongLong(), p.peak_bytes);
        backward = backward || p.name.find("backward") != std::string::npos;
      }
    }
    QVERIFY2(backward, "a train run has backward phases");
    // The charts say what was computed: the sweep is all train (the context line), and the picked
    // run's checkpoint is named in the memory breakdown's context.
    const QString context = plotContext(view.phasePlot())->text().replace(QChar('\n'), QString(" \u00b7 "));
    QVERIFY2(context.contains("\u00b7 train \u00b7"), qPrintable(context));
    QVERIFY(plotContext(view.plots()[0])->text().contains("checkpoint attention"));
  }

  void layerPhasesNestedByPath() {
    // kind layer: the projections' phases, and backward steps nested inside them by path.
    BreakdownView view;
    view.setEventSource(loader());
    view.setSweeps({layer_});
    Store store(db_, StoreMode::read);
    for (const RunResult& r : layer_->runs) {
      view.selectRun(r.id);
      const std::vector<PhaseStats> want = summarizePhases(store.events(r.id));
      QTableWidget* t = view.phaseTable();
      QCOMPARE(t->rowCount(), static_cast<int>(want.size()));
      bool nested = false, qkv = false;
      for (int i = 0; i < t->rowCount(); ++i) {
        const PhaseStats& p = want[static_cast<size_t>(i)];
        QCOMPARE(t->item(i, 0)->text(), phaseCells(p)[0]);
        QCOMPARE(t->item(i, 2)->data(Qt::UserRole).toLongLong(), p.total_ns);
        QCOMPARE(t->item(i, 5)->data(Qt::UserRole).toLongLong(), p.peak_bytes);
        nested = nested || (p.depth > 0 && t->item(i, 0)->text().startsWith("  "));
        qkv = qkv || p.name == "qkv_proj";
      }
      QVERIFY2(nested && qkv, qPrintable(QString::fromStdString(r.backend)));
      // The memory bar: at most kMaxSegments buffers apiece plus one for the smaller ones, and
      // together every buffer live at the plan's peak step.
      int64_t live = 0;
      const int peak = r.plan.peakStep();
      for (const PlannedBuffer& b : r.plan.buffers)
        if (b.first_step <= peak && peak <= b.last_step) live += b.bytes;
      double stacked = 0;
      int segments = 0;
      QCustomPlot* memory = view.plots()[0];
      for (int k = 0; k < memory->plottableCount(); ++k) {
        auto* b = qobject_cast<QCPBars*>(memory->plottable(k));
        if (!b || b->data()->isEmpty() || b->data()->begin()->key != 1) continue;
        stacked += b->data()->begin()->value;
        ++segments;
      }
      QCOMPARE(stacked, static_cast<double>(live));
      QVERIFY(segments <= static_cast<int>(BreakdownView::kMaxSegments) + 1);
      // Nested phases are inside their parent's segment: only top-level names are stacked.
      for (int k = 0; k < view.phasePlot()->plottableCount(); ++k)
        QVERIFY(!view.phasePlot()->plottable(k)->name().contains('/'));
    }
  }

  void bufferTableIsNotCutOff() {
    // A layer train run's plan has wide step names (inputs..qkv_proj_backward); at a 1280x800
    // window's share of the width the table scrolls sideways rather than losing its last column.
    BreakdownView view;
    view.setEventSource(loader());
    view.setSweeps({layer_});
    view.resize(900, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    auto* table = view.findChild<QLabel*>("breakdownBuffers");
    QVERIFY(table);
    for (const RunResult& r : layer_->runs) {
      if (r.spec.pass != Pass::train) continue;
      view.selectRun(r.id);
      QVERIFY(table->text().contains("qkv_proj_backward"));
      QTextDocument doc;
      doc.setDefaultFont(table->font());
      doc.setDocumentMargin(0);  // as QLabel lays its text out
      doc.setHtml(table->text());
      QTRY_VERIFY2(table->contentsRect().width() >= qCeil(doc.idealWidth()),
                   qPrintable(QString("%1 < %2").arg(table->contentsRect().width()).arg(doc.idealWidth())));
      return;
    }
    QFAIL("no layer train run");
  }

  void barsStackCoresShares() {
    BreakdownView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.setSweeps({train_});
    Store store(db_, StoreMode::read);
    const std::vector<int64_t>& bars = view.phaseBarRuns();
    QCOMPARE(bars.size(), train_->runs.size());
    QCustomPlot* plot = view.phasePlot();
    QVERIFY(plot->plottableCount() > 0);
    for (size_t i = 0; i < bars.size(); ++i) {
      const std::vector<PhaseStats> want = summarizePhases(store.events(bars[i]));
      double sum = 0;
      for (int k = 0; k < plot->plottableCount(); ++k) {
        auto* b = qobject_cast<QCPBars*>(plot->plottable(k));
        QVERIFY(b);
        double share = 0;
        for (const PhaseStats& p : want)
          if (p.depth == 0 && QString::fromStdString(p.name) == b->name()) share = 100.0 * p.share;
        auto it = b->data()->findBegin(static_cast<double>(i), false);
        QVERIFY(it != b->data()->end() && it->key == static_cast<double>(i));
        QCOMPARE(it->value, share);
        sum += it->value;
      }
      QVERIFY2(std::abs(sum - 100.0) < 1e-6, qPrintable(QString::number(sum)));
    }
    // A click on a point's bar picks that run (here and, through runPicked, in the window).
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    // Where bar 3 is once the shown window's layout has settled (a resize may still be queued).
    auto bar3 = [plot] {
      plot->replot();
      return QPoint(qRound(plot->xAxis->coordToPixel(3)), qRound(plot->yAxis->coordToPixel(50)));
    };
    QTRY_VERIFY(qobject_cast<QCPBars*>(plot->plottableAt(bar3(), false)));
    const QPoint at = bar3();
    QSignalSpy picked(&view, &ChartView::runPicked);
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QCOMPARE(picked.count(), 1);
    QCOMPARE(picked.front().front().toLongLong(), bars[3]);
    QCOMPARE(view.runBox()->currentData().toLongLong(), bars[3]);
    // Pass and checkpoint differ between the bars, so their labels say which is which.
    const auto ticks = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticks);
    QVERIFY(ticks->ticks().value(0).contains("no ckpt"));
    QVERIFY(ticks->ticks().value(static_cast<double>(bars.size() - 1)).contains("ckpt"));
  }

  void barsInTimePerPassAndTheHoverSaysBoth() {
    BreakdownView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.setSweeps({train_});
    Store store(db_, StoreMode::read);
    // Chosen in the combo, as a user does.
    QComboBox* scale = view.phaseScaleBox();
    scale->setCurrentIndex(scale->findData(static_cast<int>(BreakdownView::PhaseScale::time)));
    QCOMPARE(view.phaseScale(), BreakdownView::PhaseScale::time);
    QCustomPlot* plot = view.phasePlot();
    const QString label = plot->yAxis->label();
    QVERIFY2(label.startsWith("time per pass ("), qPrintable(label));
    const QString unit = label.section('(', 1).section(')', 0, 0);
    const double ns = unit == "s" ? 1e9 : unit == "ms" ? 1e6 : unit == QString::fromUtf8("\u00b5s") ? 1e3 : 1;
    QVERIFY2(unit == "s" || unit == "ms" || unit == QString::fromUtf8("\u00b5s") || unit == "ns", qPrintable(unit));
    const std::vector<int64_t>& bars = view.phaseBarRuns();
    double tallest = 0;
    for (size_t i = 0; i < bars.size(); ++i) {
      const std::vector<PhaseStats> want = summarizePhases(store.events(bars[i]));
      double sum = 0;
      for (int k = 0; k < plot->plottableCount(); ++k) {
        auto* b = qobject_cast<QCPBars*>(plot->plottable(k));
        double mean = 0;
        for (const PhaseStats& p : want)
          if (p.depth == 0 && QString::fromStdString(p.name) == b->name()) mean = static_cast<double>(p.meanNs()) / ns;
        auto it = b->data()->findBegin(static_cast<double>(i), false);
        QCOMPARE(it->value, mean);
        sum += it->value;
        if (mean > 0 && i == 0) {
          // The hover names the run and gives the phase's time and share.
          const QString tip = view.phaseTip(i, b->name());
          QVERIFY2(tip.startsWith(QString("R%1 ").arg(bars[i])), qPrintable(tip));
          for (const PhaseStats& p : want) {
            if (p.depth != 0 || QString::fromStdString(p.name) != b->name()) continue;
            QVERIFY2(tip.contains(QString::fromStdString(formatDuration(static_cast<double>(p.meanNs()) * 1e-9)) +
                                  " per pass"),
                     qPrintable(tip));
            QVERIFY2(tip.contains(QString::number(100.0 * p.share, 'f', 1) + " %"), qPrintable(tip));
          }
        }
      }
      tallest = std::max(tallest, sum);
    }
    // The axis holds the tallest bar, in a unit it reads in (1.5 ms, not 1500 µs or 0.0015 s).
    QVERIFY(plot->yAxis->range().upper >= tallest);
    QVERIFY2(tallest >= 2 || unit == "ns", qPrintable(QString::number(tallest)));
    QVERIFY2(tallest < 2000 || unit == "s", qPrintable(QString::number(tallest)));
    // Back to shares: every bar sums to 100 %.
    view.setPhaseScale(BreakdownView::PhaseScale::share);
    QCOMPARE(scale->currentData().toInt(), static_cast<int>(BreakdownView::PhaseScale::share));
    QCOMPARE(plot->yAxis->label(), QString("time share (%)"));
  }

  void pointLabelsNeverOverprint() {
    // Every sweep at once: up to 40 bars, in a narrow window, then a wide one.
    BreakdownView view;
    view.setEventSource(loader());
    view.setSweeps({train_, passes_, layer_});
    QCustomPlot* plot = view.phasePlot();
    const size_t count = view.phaseBarRuns().size();
    QVERIFY(count > 30);
    auto labelled = [&] {
      std::vector<double> at;
      const auto ticks = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
      for (auto it = ticks->ticks().cbegin(); it != ticks->ticks().cend(); ++it)
        if (!it.value().isEmpty()) at.push_back(plot->xAxis->coordToPixel(it.key()));
      return at;
    };
    const double line = QFontMetrics(plot->xAxis->tickLabelFont()).height();
    for (int width : {900, 1400, 2600}) {
      view.resize(width, 800);
      view.show();
      QVERIFY(QTest::qWaitForWindowExposed(&view));
      // Settled: the plot laid out at this width, and the labels thinned for it.
      for (int i = 0; i < 3; ++i) {
        plot->replot();
        QCoreApplication::processEvents();
      }
      const std::vector<double> at = labelled();
      QVERIFY(!at.empty());
      for (size_t i = 1; i < at.size(); ++i)
        QVERIFY2(at[i] - at[i - 1] >= line,
                 qPrintable(QString("width %1: labels %2 px apart, a line is %3 px").arg(width).arg(at[i] - at[i - 1]).arg(line)));
      // As many as fit: halving the stride would overprint.
      const double per_bar = plot->xAxis->coordToPixel(1) - plot->xAxis->coordToPixel(0);
      if (view.phaseLabelStride() > 1) QVERIFY(per_bar * (view.phaseLabelStride() - 1) < line);
      if (width == 900) QVERIFY2(view.phaseLabelStride() > 1, qPrintable(QString::number(per_bar)));
      if (width == 2600) QCOMPARE(at.size(), count);
    }
  }

  void phasesLoadOffTheGuiThread() {
    BreakdownView view;
    QThread* gui = QThread::currentThread();
    auto threads = std::make_shared<std::atomic<int>>(0);
    const std::string db = db_;
    view.setBackgroundLoading(true);
    view.setEventSource([db, gui, threads](int64_t id) {
      if (QThread::currentThread() != gui) ++*threads;
      return Store(db, StoreMode::read).events(id);
    });
    view.setSweeps({train_});
    QVERIFY(view.loadingPhases());
    QTRY_VERIFY_WITH_TIMEOUT(!view.loadingPhases(), 60000);
    QVERIFY(*threads >= static_cast<int>(train_->runs.size()));
    QVERIFY(view.phaseTable()->rowCount() > 0);
    // Another database forgets what was loaded (run ids are per database).
    view.setEventSource([](int64_t) -> std::vector<TraceEvent> { throw std::runtime_error("gone"); });
    QVERIFY(!view.phaseSummaries().find(train_->runs.front().id));
  }

  void memorySeriesByPassAndCheckpoint() {
    MemoryView view;
    view.resize(1400, 600);
    view.setSweeps({train_, passes_});
    std::map<int64_t, const RunResult*> runs;
    for (const auto& snap : {train_, passes_})
      for (const RunResult& r : snap->runs) runs[r.id] = &r;
    QStringList labels;
    int points = 0;
    for (QCustomPlot* plot : view.plots()) {
      for (int g = 0; g < plot->graphCount(); ++g) {
        QCPGraph* graph = plot->graph(g);
        if (graph->property("kind").toString() != "measured") continue;
        const QString label = graph->name();
        labels << label;
        const QVariantList ids = graph->property("runIds").toList();
        QCOMPARE(ids.size(), graph->dataCount());
        for (int i = 0; i < ids.size(); ++i) {
          const RunResult* r = runs.at(ids[i].toLongLong());
          QCOMPARE(graph->data()->at(i)->value, static_cast<double>(r->memory.measured_peak));
          // The label names the run's backend, pass and checkpoint.
          QVERIFY2(label.contains(QString::fromStdString(r->backend)), qPrintable(label));
          QVERIFY2(label.contains("pass=" + QString::fromUtf8(toString(r->spec.pass).data())), qPrintable(label));
          QVERIFY2(label.contains("checkpoint=" + QString::fromUtf8(toString(r->spec.checkpoint).data())), qPrintable(label));
          ++points;
        }
      }
    }
    QCOMPARE(points, 2 * static_cast<int>(runs.size()));  // every run in both plots
    // "pass=train checkpoint=none" is in both sweeps: the sweep's id leads every label.
    const QString train_id = QString("S%1: ").arg(train_->info.id), passes_id = QString("S%1: ").arg(passes_->info.id);
    QVERIFY2(labels.contains(train_id + "cpu.reference pass=train checkpoint=attention seq=32"), qPrintable(labels.join(" | ")));
    QVERIFY2(labels.contains(passes_id + "cpu.flash pass=forward checkpoint=none heads=2"), qPrintable(labels.join(" | ")));
    // Beside only the forward runs the fields tell the series apart: no sweep name needed.
    auto forward = std::make_shared<SweepSnapshot>(*passes_);
    std::erase_if(forward->runs, [](const RunResult& r) { return r.spec.pass != Pass::forward; });
    QStringList short_labels;
    for (const PlotSeries& ps : buildSeries({train_, forward}, XField::heads)) short_labels << QString::fromStdString(ps.label);
    QCOMPARE(short_labels.size(), 12);  // 2 backends x (2 checkpoints + forward) x 2 seq
    QVERIFY2(short_labels.contains("cpu.reference pass=train checkpoint=attention seq=32"), qPrintable(short_labels.join(" | ")));
    QVERIFY2(short_labels.contains("cpu.flash pass=forward checkpoint=none seq=16"), qPrintable(short_labels.join(" | ")));
    // Training keeps more live than the forward pass of the same point (cpu.reference saves P).
    for (const RunResult& f : passes_->runs)
      for (const RunResult& t : passes_->runs)
        if (f.backend == t.backend && f.spec.heads == t.spec.heads && f.spec.seq_q == t.spec.seq_q &&
            f.spec.pass == Pass::forward && t.spec.pass == Pass::train)
          QVERIFY(t.memory.measured_peak > f.memory.measured_peak);
  }

  void reportCarriesPhaseTables() {
    const QString pdf = dir_.filePath("report.pdf");
    QCOMPARE(writeReport({train_}, pdf, QString(), OutputRule::file, loader()), QString());
    const QString pdftotext = QStandardPaths::findExecutable("pdftotext");
    if (pdftotext.isEmpty()) QSKIP("pdftotext (poppler-utils) not installed: the report's text cannot be read back");
    QProcess p;
    p.start(pdftotext, {"-layout", pdf, "-"});
    QVERIFY(p.waitForFinished(60000));
    const QString text = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY(text.contains("Phases"));
    QVERIFY2(text.contains("Fixed workload: train, batch 1"), "the cover names the pass");
    // One table per backend and checkpoint (the largest point), each with core's rows.
    Store store(db_, StoreMode::read);
    const auto reps = representativeRuns({train_}, 8);
    QCOMPARE(reps.size(), size_t{4});
    for (const RunResult* r : reps) {
      QVERIFY2(text.contains(QStringLiteral("R%1 ").arg(r->id)), qPrintable(QString::number(r->id)));
      for (const PhaseStats& ph : summarizePhases(store.events(r->id))) {
        const QStringList cells = phaseCells(ph);
        QVERIFY2(text.contains(cells[0].trimmed()), qPrintable(cells[0]));
        QVERIFY2(text.contains(cells[5]), qPrintable(cells[5]));
      }
    }
  }

 private:
  PhaseSummaries::EventLoader loader() const {
    return [db = db_](int64_t id) { return Store(db, StoreMode::read).events(id); };
  }
  QTemporaryDir dir_;
  std::string db_;
  SweepSnapshotPtr train_, passes_, layer_;
};

ATTNSCOPE_UI_TEST_MAIN(TestPhases)
#include "test_phases.moc"
