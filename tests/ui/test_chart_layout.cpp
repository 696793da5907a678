// How the charts read whatever their series: the plot keeps its share of the chart beside a long
// legend (alone, and in the window at the screen sizes users have), no legend entry runs outside
// the chart, and forward vs train and the checkpoint modes are told by line pattern and marker,
// the other fields by shade, with a key that says so. Real CPU sweeps in a real database.

#include <map>
#include <set>

#include <QAction>
#include <QComboBox>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QProcess>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <type_traits>
#include <qcustomplot.h>

#include "core/spec/sweep_spec.h"
#include "core/store/store.h"
#include "core/base/format.h"
#include "ui/chart_context.h"
#include "ui/heatmap_view.h"
#include "ui/main_window.h"
#include "ui/memory_view.h"
#include "ui/plot_layout.h"
#include "ui/results_table_model.h"
#include "ui/sweep_tree_model.h"
#include "ui/series_builder.h"
#include "ui/series_plot.h"
#include "ui/time_view.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

QStringList legendNames(QCustomPlot* plot) {
  QStringList names;
  for (int i = 0; i < plot->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i)))
      names << item->plottable()->name();
  return names;
}

// The plot area against the chart, and every legend entry inside the chart.
void checkShare(QCustomPlot* plot, const QString& where) {
  if (qEnvironmentVariableIsSet("ATTNSCOPE_TEST_SHOTS"))  // to look at what was measured
    plot->grab().save(qEnvironmentVariable("ATTNSCOPE_TEST_SHOTS") + "/" + QString(where).replace(' ', '_') + ".png");
  const QRect chart(QPoint(0, 0), plot->size());
  const QRect area = plot->axisRect()->rect();
  QVERIFY2(area.width() >= kMinPlotWidthShare * chart.width(),
           qPrintable(QString("%1: plot %2 px wide in a %3 px chart (legend %4)")
                          .arg(where).arg(area.width()).arg(chart.width())
                          .arg(legendPlace(plot) == LegendPlace::right ? "right" : "below")));
  QVERIFY2(area.height() >= kMinPlotHeightShare * chart.height(),
           qPrintable(QString("%1: plot %2 px high in a %3 px chart").arg(where).arg(area.height()).arg(chart.height())));
  for (int i = 0; i < plot->legend->itemCount(); ++i) {
    if (!plot->legend->item(i)) continue;  // an empty cell of the wrapped grid
    const QRect r = plot->legend->item(i)->outerRect();
    // Never cut: the entry has the width its text asks for.
    QVERIFY2(r.width() >= plot->legend->item(i)->minimumOuterSizeHint().width(),
             qPrintable(QString("%1: legend entry %2 cut to %3 of %4 px").arg(where).arg(i).arg(r.width())
                            .arg(plot->legend->item(i)->minimumOuterSizeHint().width())));
    QVERIFY2(chart.contains(r), qPrintable(QString("%1: legend entry %2 at %3,%4 %5x%6 leaves the %7x%8 chart")
                                               .arg(where).arg(i).arg(r.x()).arg(r.y()).arg(r.width())
                                               .arg(r.height()).arg(chart.width()).arg(chart.height())));
  }
  // Nothing overlaps: the legend is beside or below the plot, never on it.
  QVERIFY2(!plot->legend->outerRect().intersects(area), qPrintable(where + ": the legend covers the plot"));
}

}  // namespace

class TestChartLayout : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  std::unique_ptr<Store> store_;
  int64_t train_ = 0, wide_ = 0, named_a_ = 0, named_b_ = 0;

 private Q_SLOTS:
  void initTestCase() {
    store_ = std::make_unique<Store>(dir_.filePath("layout.db").toStdString());
    // Forward vs train, checkpoint none vs attention, two seq values, two backends.
    SweepSpec train = test::tinySweep();
    train.name = "train";
    train.axes = {{"heads", {"1", "2"}}, {"seq", {"16", "32"}}, {"pass", {"forward", "train"}},
                  {"checkpoint", {"none", "attention"}}};
    train_ = test::runSweepInto(*store_, train);
    // Many series: ten seq values of two backends plotted against heads (with the key, 22
    // legend entries: near kFitEntries).
    SweepSpec wide = test::tinySweep();
    wide.name = "wide";
    wide.axes = {{"heads", {"1", "2"}}, {"seq", {"8", "12", "16", "20", "24", "28", "32", "40", "48", "64"}}};
    wide_ = test::runSweepInto(*store_, wide);
    // Sweeps alike with long names: every label is prefixed by its sweep's name.
    SweepSpec a = test::tinySweep();
    a.name = "a sweep whose name alone is forty characters";
    named_a_ = test::runSweepInto(*store_, a);
    a.name = "another sweep with a name just as long ok";
    named_b_ = test::runSweepInto(*store_, a);
  }

  void passIsTheLineCheckpointTheMarker() {
    MemoryView view;
    view.resize(900, 600);
    view.show();
    view.setSweeps({loadSweepSnapshot(*store_, train_)});
    QCustomPlot* plot = view.findChild<QCustomPlot*>("memoryHeadsPlot");
    QVERIFY(plot);
    int measured = 0;
    std::map<QString, std::set<QRgb>> colours;  // "backend seq" -> colours seen
    for (int i = 0; i < plot->graphCount(); ++i) {
      QCPGraph* g = plot->graph(i);
      if (g->property("kind").toString() != "measured" || g->dataCount() == 0) continue;
      const auto ids = g->property("runIds").toList();
      QVERIFY(!ids.isEmpty());
      const RunResult r = *store_->run(ids.front().toLongLong(), false);
      ++measured;
      QCOMPARE(g->pen().style(), r.spec.pass == Pass::train ? Qt::DashDotLine : Qt::SolidLine);
      QCOMPARE(g->scatterStyle().shape(),
               r.spec.checkpoint == Checkpoint::attention ? QCPScatterStyle::ssSquare : QCPScatterStyle::ssDisc);
      colours[g->property("backend").toString() + QString(" seq=%1").arg(r.spec.seq_q)].insert(g->pen().color().rgb());
    }
    // forward (none), train none, train attention: 3 series per backend and seq value.
    QCOMPARE(measured, 2 * 2 * 3);
    // One colour per backend and seq, shared by its pass and checkpoint variants; all distinct.
    std::set<QRgb> all;
    for (const auto& [name, seen] : colours) {
      QVERIFY2(seen.size() == 1, qPrintable(name + " drawn in more than one colour"));
      all.insert(*seen.begin());
    }
    QCOMPARE(all.size(), colours.size());
    // The legend names each colour once, then the key; no entry repeats the encoded fields.
    const QStringList names = legendNames(plot);
    for (const char* want : {"cpu.reference seq=16", "cpu.reference seq=32", "cpu.flash seq=16", "cpu.flash seq=32",
                             "pass=forward", "pass=train", "checkpoint=none", "checkpoint=attention", "measured",
                             "predicted"})
      QVERIFY2(names.contains(QString(want)), qPrintable(QString("legend lacks '%1': %2").arg(want, names.join(" | "))));
    QCOMPARE(names.size(), 10);
    // The key's own entries draw what they name.
    for (int i = 0; i < plot->graphCount(); ++i) {
      QCPGraph* g = plot->graph(i);
      if (g->name() == "pass=train") QCOMPARE(g->pen().style(), Qt::DashDotLine);
      if (g->name() == "pass=forward") QCOMPARE(g->pen().style(), Qt::SolidLine);
      if (g->name() == "checkpoint=attention") QCOMPARE(g->scatterStyle().shape(), QCPScatterStyle::ssSquare);
      if (g->name() == "checkpoint=none") QCOMPARE(g->scatterStyle().shape(), QCPScatterStyle::ssDisc);
    }
  }

  // One map per backend x pass x checkpoint: every run has a cell of its own holding its own peak,
  // and the title says which runs the map shows.
  void heatmapPerPassAndCheckpoint() {
    HeatmapView view;
    view.resize(1200, 800);
    view.show();
    const SweepSnapshotPtr snap = loadSweepSnapshot(*store_, train_);
    view.setSweeps({snap});
    QCOMPARE(view.plots().size(), 2 * 3);
    const std::vector<std::string> variants = mapVariants(*snap);
    QCOMPARE(variants.size(), snap->runs.size());
    std::set<std::string> distinct(variants.begin(), variants.end());
    QCOMPARE(distinct, (std::set<std::string>{"pass=forward checkpoint=none", "pass=train checkpoint=none",
                                              "pass=train checkpoint=attention"}));
    for (size_t i = 0; i < snap->runs.size(); ++i) {
      const RunResult& r = snap->runs[i];
      QCPColorMap* map = view.colorMap(r.backend, 0, variants[i]);
      QVERIFY2(map, variants[i].c_str());
      const int x = r.spec.heads == 1 ? 0 : 1, y = r.spec.seq_q == 16 ? 0 : 1;
      QCOMPARE(map->data()->cell(x, y), static_cast<double>(r.memory.measured_peak));
      QCustomPlot* plot = view.mapPlot(r.backend, 0, variants[i]);
      const QString title = plotTitle(plot)->text();
      QVERIFY2(title.contains(QString::fromStdString(r.backend)) && title.contains(QString::fromStdString(variants[i])),
               qPrintable(title));
    }
    // Forward only: nothing else varies, one map per backend titled with the backend alone.
    view.setSweeps({loadSweepSnapshot(*store_, wide_)});
    QCOMPARE(view.plots().size(), 2);
    QCOMPARE(plotTitle(view.mapPlot("cpu.flash"))->text(), QString("cpu.flash"));
  }

  // The report opens with what the sweep shows: the largest peak and its run, the backends at the
  // largest point with their ratio, and the points that did not run.
  void findings() {
    const SweepSnapshotPtr wide = loadSweepSnapshot(*store_, wide_);
    const RunResult* largest = nullptr;
    for (const RunResult& r : wide->runs)
      if (!largest || r.memory.measured_peak > largest->memory.measured_peak) largest = &r;
    std::vector<std::string> lines = sweepFindings({wide});
    QCOMPARE(lines.size(), size_t{3});
    QVERIFY2(lines[0].find("R" + std::to_string(largest->id) + " " + largest->backend) != std::string::npos, lines[0].c_str());
    QVERIFY2(lines[0].find(formatBytes(largest->memory.measured_peak)) != std::string::npos, lines[0].c_str());
    QVERIFY2(lines[1].find("H2/2 L64x64") != std::string::npos && lines[1].find("cpu.flash") != std::string::npos &&
                 lines[1].find("cpu.reference") != std::string::npos && lines[1].find("x what") != std::string::npos,
             lines[1].c_str());
    QCOMPARE(lines[2], std::string("every point ran ok (40 runs)"));
    // A budget under the largest points: those are skipped, and said so.
    SweepSpec tight = test::tinySweep();
    tight.name = "tight";
    tight.memory_budget = largest->memory.predicted_peak - 1;
    tight.axes = {{"heads", {"1", "2"}}, {"seq", {"32", "64"}}};
    const SweepSnapshotPtr t = loadSweepSnapshot(*store_, test::runSweepInto(*store_, tight));
    lines = sweepFindings({t});
    QVERIFY2(lines.back().find(" points did not run ok: ") != std::string::npos && lines.back().find("skipped") != std::string::npos,
             lines.back().c_str());
  }

  // Time shows the spread of the repetitions: a bar from the fastest to the slowest around each
  // median, as the tooltip says.
  void latencySpread() {
    SweepSpec reps = test::tinySweep();
    reps.name = "reps";
    reps.reps = 4;
    reps.axes = {{"heads", {"1", "2"}}, {"seq", {"32"}}};
    const SweepSnapshotPtr snap = loadSweepSnapshot(*store_, test::runSweepInto(*store_, reps));
    TimeView view;
    view.resize(900, 500);
    view.setSweeps({snap});
    QCustomPlot* plot = view.findChild<QCustomPlot*>("latencyPlot");
    int bars = 0;
    for (int i = 0; i < plot->plottableCount(); ++i) {
      auto* spread = qobject_cast<QCPErrorBars*>(plot->plottable(i));
      if (!spread) continue;
      auto* graph = qobject_cast<QCPGraph*>(spread->dataPlottable());
      QVERIFY(graph);
      const QVariantList ids = graph->property("runIds").toList();
      QCOMPARE(spread->dataCount(), graph->dataCount());
      for (int k = 0; k < graph->dataCount(); ++k) {
        const RunResult* r = nullptr;
        for (const RunResult& run : snap->runs)
          if (run.id == ids[k].toLongLong()) r = &run;
        QVERIFY(r && r->timing.reps == 4 && r->timing.max_s >= r->timing.min_s);
        const double unit = graph->data()->at(k)->value / r->timing.median_s;  // axis units per second
        QVERIFY(std::abs((graph->data()->at(k)->value - spread->data()->at(k).errorMinus) - r->timing.min_s * unit) <=
                1e-9 * unit + 1e-12);
        QVERIFY(std::abs((graph->data()->at(k)->value + spread->data()->at(k).errorPlus) - r->timing.max_s * unit) <=
                1e-9 * unit + 1e-12);
        ++bars;
      }
    }
    QCOMPARE(bars, 4);  // two backends at two points
  }

  // A rebuild (a point arrives, a checkbox) leaves the legend as its last fit laid it out, in
  // the view's own font size where that fits.
  void refitAfterRebuild() {
    MemoryView view;
    view.resize(1040, 850);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSweeps({loadSweepSnapshot(*store_, wide_)});
    QCustomPlot* plot = view.findChild<QCustomPlot*>("memoryHeadsPlot");
    plot->replot();
    const LegendPlace place = legendPlace(plot);
    const int wrap = plot->legend->wrap();
    const auto order = plot->legend->fillOrder();
    QCOMPARE(plot->legend->font().pointSizeF(), 8.0);  // MemoryView's legend font
    view.setSweeps({loadSweepSnapshot(*store_, wide_)});
    plot->replot();
    QCOMPARE(legendPlace(plot), place);
    QCOMPARE(plot->legend->wrap(), wrap);
    QCOMPARE(plot->legend->fillOrder(), order);
    checkShare(plot, "after a rebuild");
  }

  void memoryZoomResets() {
    MemoryView view;
    view.resize(900, 600);
    view.setSweeps({loadSweepSnapshot(*store_, wide_)});
    QCustomPlot* plot = view.findChild<QCustomPlot*>("memorySeqPlot");
    const QCPRange x = plot->xAxis->range(), y = plot->yAxis->range();
    plot->xAxis->scaleRange(0.25, x.center());  // as the wheel does
    plot->yAxis->scaleRange(0.25, y.center());
    QVERIFY(plot->xAxis->range().size() < x.size());
    view.findChild<QPushButton*>("memoryResetZoom")->click();
    QCOMPARE(plot->xAxis->range(), x);
    QCOMPARE(plot->yAxis->range(), y);
  }

  void forwardOnlyKeepsOneEntryPerSeries() {
    MemoryView view;
    view.resize(900, 600);
    view.show();
    view.setSweeps({loadSweepSnapshot(*store_, wide_)});
    QCustomPlot* plot = view.findChild<QCustomPlot*>("memoryHeadsPlot");
    const QStringList names = legendNames(plot);
    QVERIFY(names.contains("cpu.flash seq=40"));
    QVERIFY(!names.contains("pass=forward"));  // nothing encoded, no key for it
    QCOMPARE(names.size(), 2 * 10 + 2);        // the series, measured and predicted
  }

  void plotKeepsItsShare_data() {
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<int>("which");
    for (int which = 0; which < 3; ++which)
      for (auto [w, h] : {std::pair{380, 650}, {480, 360}, {640, 480}, {900, 700}, {1400, 500}})
        QTest::addRow("%s %dx%d", which == 0 ? "train" : which == 1 ? "wide" : "named", w, h) << w << h << which;
  }
  void plotKeepsItsShare() {
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(int, which);
    SweepSnapshots shown;
    if (which == 0) shown = {loadSweepSnapshot(*store_, train_)};
    if (which == 1) shown = {loadSweepSnapshot(*store_, wide_)};
    if (which == 2) shown = {loadSweepSnapshot(*store_, named_a_), loadSweepSnapshot(*store_, named_b_)};
    MemoryView memory;
    TimeView time;
    for (ChartView* view : std::initializer_list<ChartView*>{&memory, &time}) {
      view->setSweeps(shown);
      for (QCustomPlot* plot : view->plots()) {
        plot->setParent(nullptr);  // measured alone, at exactly this size
        plot->resize(width, height);
        plot->show();
        QVERIFY(QTest::qWaitForWindowExposed(plot));
        QCOMPARE(plot->viewport().size(), QSize(width, height));
        plot->replot();
        checkShare(plot, QString("%1 %2x%3 %4").arg(plot->objectName()).arg(width).arg(height).arg(which));
        plot->setParent(view);
      }
    }
  }

  // Every mark is linked to its run: a click on a point in Memory or Time, on a heatmap cell or a
  // Results row shows that run in Breakdown and Timeline and selects its Results row; the
  // tooltip and the Results table name it R<n>.
  void legendEntriesKeepTheirUnderscores() {
    // QCustomPlot clips an entry to its icon's height or its text's, and an underscore sits a
    // pixel below the text's: with icons of the text's height "qkv_proj" read "qkv proj". An entry
    // of underscores alone, at each size the fit may pick, still draws them.
    for (double pt : {8.0, 7.0, 6.0}) {
      QCustomPlot plot;
      plot.resize(500, 300);
      initPlotLayout(&plot, "underscores");
      plot.legend->setVisible(true);
      plot.legend->setFont(QFont(plot.font().family(), static_cast<int>(pt)));
      QCPGraph* g = plot.addGraph();
      g->setName("________");
      g->setPen(Qt::NoPen);  // the icon draws nothing: what is dark is the text
      fitChart(&plot, QSize(500, 300));  // as every replot and export does
      const QImage image = plot.toPixmap(500, 300).toImage();
      auto* item = plot.legend->item(0);
      QVERIFY(item);
      const QRect text = item->rect().adjusted(plot.legend->iconSize().width(), 0, 0, 0);
      int dark = 0;
      for (int y = text.top(); y <= text.bottom(); ++y)
        for (int x = text.left(); x <= text.right(); ++x) dark += qGray(image.pixel(x, y)) < 128;
      QVERIFY2(dark > 0, qPrintable(QString("%1 pt: no underscore drawn in %2x%3").arg(pt).arg(text.width()).arg(text.height())));
    }
  }

  void aClickPicksItsRun() {
    store_.reset();
    MainWindow w(dir_.filePath("layout.db"));
    w.resize(1600, 1000);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showSweeps({train_});
    auto* breakdown = w.findChild<QComboBox*>("breakdownRun");
    auto* timeline = w.findChild<QComboBox*>("timelineRun");
    auto* results = w.findChild<QTableView*>("resultsView");
    QVERIFY(breakdown && timeline && results);
    auto shownEverywhere = [&](qint64 id) {
      QTRY_COMPARE(breakdown->currentData().toLongLong(), id);
      QCOMPARE(timeline->currentData().toLongLong(), id);
      QCOMPARE(results->currentIndex().data(ResultsTableModel::RunIdRole).toLongLong(), id);
      QCOMPARE(results->model()->index(results->currentIndex().row(), ResultsTableModel::RunColumn).data().toString(),
               QString("R%1").arg(id));
    };
    auto tab = [&](auto* type_tag) {
      using View = std::remove_pointer_t<decltype(type_tag)>;
      for (int t = 0; t < w.tabs()->count(); ++t)
        if (auto* v = qobject_cast<View*>(w.tabs()->widget(t))) {
          w.tabs()->setCurrentIndex(t);
          return v;
        }
      return static_cast<View*>(nullptr);
    };
    // Memory and Time: click the last point of a measured graph (every graph a different run).
    std::set<qint64> picked;
    for (ChartView* view : std::initializer_list<ChartView*>{tab(static_cast<MemoryView*>(nullptr)),
                                                             tab(static_cast<TimeView*>(nullptr))}) {
      QVERIFY(view);
      w.tabs()->setCurrentWidget(view);
      QTest::qWait(50);
      for (QCustomPlot* plot : view->plots()) {
        plot->replot();
        int clicked = 0;
        for (int g = 0; g < plot->graphCount() && clicked < 2; ++g) {
          QCPGraph* graph = plot->graph(g);
          if (graph->property("kind").toString() != "measured" || graph->dataCount() == 0) continue;
          const int i = graph->dataCount() - 1;
          const QPoint at(qRound(graph->keyAxis()->coordToPixel(graph->data()->at(i)->key)),
                          qRound(graph->valueAxis()->coordToPixel(graph->data()->at(i)->value)));
          // Another graph's point may lie exactly there (forward and train of tiny sizes); the
          // nearest one is picked, so ask which that is.
          QCPGraph* nearest = nullptr;
          int index = -1;
          QVERIFY(ChartView::nearestPoint(plot, at, &nearest, &index));
          const qint64 want = nearest->property("runIds").toList().at(index).toLongLong();
          QTest::mouseClick(plot, Qt::LeftButton, {}, at);
          shownEverywhere(want);
          picked.insert(want);
          ++clicked;
        }
        QVERIFY2(clicked > 0, qPrintable(plot->objectName()));
      }
    }
    QVERIFY(picked.size() >= 2);
    // A heatmap cell.
    auto* heatmap = tab(static_cast<HeatmapView*>(nullptr));
    QVERIFY(heatmap);
    QTest::qWait(50);
    QCustomPlot* map_plot = heatmap->plots().back();
    map_plot->replot();
    const QPoint cell(qRound(map_plot->xAxis->coordToPixel(1)), qRound(map_plot->yAxis->coordToPixel(0)));
    const RunResult* in_cell = heatmap->cellRun(map_plot, cell);
    QVERIFY(in_cell);
    QTest::mouseClick(map_plot, Qt::LeftButton, {}, cell);
    shownEverywhere(in_cell->id);
    // A Results row.
    w.tabs()->setCurrentWidget(results);
    results->setCurrentIndex(results->model()->index(3, ResultsTableModel::SpecColumn));
    shownEverywhere(results->model()->index(3, 0).data(ResultsTableModel::RunIdRole).toLongLong());
    w.close();
    store_ = std::make_unique<Store>(dir_.filePath("layout.db").toStdString());
  }

  // A sweep the real CLI writes while the window is open is listed within 5 s, without F5; F5
  // and Reset layout are in the View menu.
  void runsDockFollowsTheCli() {
    store_.reset();
    const QString db = dir_.filePath("layout.db");
    MainWindow w(db);
    w.resize(1440, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    const int before = w.sweepTreeModel()->rowCount();
    QProcess cli;
    cli.start(ATTNSCOPE_BIN, {"sweep", "--db", db, "--backends", "cpu.flash", "--heads", "1,2", "--seq", "16",
                              "--head-dim", "8", "--reps", "1", "--warmup", "0", "--name", "from a terminal"});
    QVERIFY(cli.waitForFinished(120000));
    QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
    QElapsedTimer listed;
    listed.start();
    QTRY_COMPARE_WITH_TIMEOUT(w.sweepTreeModel()->rowCount(), before + 1, 5000);
    qInfo("listed %lld ms after the CLI ended", static_cast<long long>(listed.elapsed()));
    auto* refresh = w.findChild<QAction*>("refreshAction");
    QVERIFY(refresh);
    QCOMPARE(refresh->shortcut(), QKeySequence(QKeySequence::Refresh));
    refresh->trigger();
    QTRY_COMPARE(w.sweepTreeModel()->rowCount(), before + 1);
    // Reset layout brings a closed dock back.
    auto* dock = w.findChildren<QDockWidget*>().front();
    dock->close();
    QVERIFY(!dock->isVisible());
    w.findChild<QAction*>("resetLayoutAction")->trigger();
    QVERIFY(dock->isVisible());
    w.close();
    store_ = std::make_unique<Store>(db.toStdString());
  }

  // The window fits a laptop's 1280 px on every tab: no label, run chooser or hint sets its width
  // (the Heatmap's note, the Timeline's run, the Runs dock's hint used to widen it to 1569 px).
  void windowKeepsItsWidthOnEveryTab() {
    store_.reset();
    MainWindow w(dir_.filePath("layout.db"));
    w.resize(1280, 800);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showSweeps({train_, named_a_});
    QVERIFY2(w.minimumSizeHint().width() <= 1280, qPrintable(QString::number(w.minimumSizeHint().width())));
    for (int t = 0; t < w.tabs()->count(); ++t) {
      w.tabs()->setCurrentIndex(t);
      QTest::qWait(30);
      QVERIFY2(w.width() == 1280, qPrintable(QString("%1: %2 px").arg(w.tabs()->tabText(t)).arg(w.width())));
    }
    w.close();
    store_ = std::make_unique<Store>(dir_.filePath("layout.db").toStdString());
  }

  // The window at the screen sizes users have, every chart of Memory and Time.
  void windowSizes_data() {
    QTest::addColumn<QSize>("size");
    for (QSize s : {QSize(1280, 800), QSize(1440, 900), QSize(1600, 1000), QSize(1920, 1080)})
      QTest::addRow("%dx%d", s.width(), s.height()) << s;
  }
  void windowSizes() {
    QFETCH(QSize, size);
    store_.reset();  // the window's own connection (a second one is fine; this keeps it simple)
    MainWindow w(dir_.filePath("layout.db"));
    w.resize(size);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    w.showSweeps({train_, named_a_});
    for (int t = 0; t < w.tabs()->count(); ++t) {
      auto* view = qobject_cast<ChartView*>(w.tabs()->widget(t));
      if (!qobject_cast<MemoryView*>(view) && !qobject_cast<TimeView*>(view)) continue;
      w.tabs()->setCurrentIndex(t);
      QTest::qWait(50);
      for (QCustomPlot* plot : view->plots()) {
        plot->replot();
        checkShare(plot, QString("%1 at %2x%3").arg(plot->objectName()).arg(size.width()).arg(size.height()));
      }
    }
    w.close();
    store_ = std::make_unique<Store>(dir_.filePath("layout.db").toStdString());
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestChartLayout)
#include "test_chart_layout.moc"
