// Issue 23's views: a stack of layers swept over layers and checkpoint, run by the real CPU
// backends into a real SQLite file, and a tensor-parallel run made of one of those runs' events
// copied onto a second rank (device 1) with communication phases ("comm") inside every layer, saved
// into the same file the way the torch backends will save theirs (facts tp.ranks, tp.rank<i>.*).
// The Memory view gets a chart against layers (and one against tp) with a series per checkpoint;
// Breakdown stacks each layer's phases as a band of its own and a rank's communication as a
// segment; the Timeline draws a memory curve and a set of phase lanes per rank.

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <QComboBox>
#include <QTableWidget>
#include <QtTest>
#include <qcustomplot.h>

#include "core/base/format.h"
#include "core/engine/recorded_sweep.h"
#include "core/spec/sweep_spec.h"
#include "core/store/store.h"
#include "core/trace/memory_timeline.h"
#include "core/trace/phase_summary.h"
#include "ui/breakdown_view.h"
#include "ui/chart_context.h"
#include "ui/memory_view.h"
#include "ui/phase_summaries.h"
#include "ui/series_builder.h"
#include "ui/series_plot.h"
#include "ui/time_view.h"
#include "ui/timeline_lanes.h"
#include "ui/timeline_view.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

QStringList legendNames(QCPLegend* legend) {
  QStringList names;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i))) names << item->plottable()->name();
  return names;
}

double maxValue(QCPGraph* g) {
  double m = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) m = std::max(m, it->value);
  return m;
}

// A second rank for `events`: every event again on device 1, 500 ns later, its allocations half as
// large again (so the ranks' peaks differ); then on both ranks a "comm" phase in the middle third of
// every out_proj (the forward's all-reduce) and every dx (the backward's), as Megatron places them.
std::vector<TraceEvent> twoRanks(const std::vector<TraceEvent>& events) {
  std::vector<TraceEvent> out = events;
  for (TraceEvent e : events) {
    e.device = 1;
    e.start_ns += 500;
    e.end_ns += 500;
    if (e.kind == EventKind::alloc || e.kind == EventKind::free) e.bytes += e.bytes / 2;
    out.push_back(e);
  }
  std::vector<TraceEvent> comm;
  for (const TraceEvent& e : out) {
    if (e.kind != EventKind::phase || (e.name != "out_proj" && e.name != "dx")) continue;
    TraceEvent c = e;
    c.name = "comm";
    c.start_ns = e.start_ns + (e.end_ns - e.start_ns) / 3;
    c.end_ns = e.end_ns - (e.end_ns - e.start_ns) / 3;
    comm.push_back(c);
  }
  out.insert(out.end(), comm.begin(), comm.end());
  return out;
}

// With ATTNSCOPE_TEST_SHOTS set, the view as the test left it, to look at.
void shoot(QWidget& view, const QString& name) {
  if (!qEnvironmentVariableIsSet("ATTNSCOPE_TEST_SHOTS")) return;
  for (QCustomPlot* plot : view.findChildren<QCustomPlot*>()) plot->replot();
  view.grab().save(qEnvironmentVariable("ATTNSCOPE_TEST_SHOTS") + "/" + name + ".png");
}

}  // namespace

class TestStackViews : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("stack.sqlite").toStdString();
    Store store(db_);
    SweepSpec stack = test::tinySweep();
    stack.name = "stack";
    setField(stack.base, "kind", "layer");
    setField(stack.base, "pass", "train");
    setField(stack.base, "heads", "2");
    setField(stack.base, "seq", "128");
    stack.axes = {{"layers", {"1", "2", "4"}}, {"checkpoint", {"none", "attention", "layer"}}};
    stack.warmup = 1;
    stack.reps = 2;
    stack_ = loadSweepSnapshot(store, test::runSweepInto(store, stack));
    QVERIFY(stack_);
    QCOMPARE(stack_->runs.size(), size_t{3 * 3 * 2});
    for (const RunResult& r : stack_->runs) QVERIFY2(r.status == RunStatus::ok, r.message.c_str());
    plain_ = loadSweepSnapshot(store, test::runSweepInto(store, test::tinySweep()));
    QVERIFY(plain_);

    // The tensor-parallel sweep: tp 1 (a 2-layer cpu.flash run as it is) and tp 2 (its events on
    // two ranks, with communication), saved as one sweep over tp.
    const RunResult* source = nullptr;
    for (const RunResult& r : stack_->runs)
      if (r.backend == "cpu.flash" && r.spec.layers == 2 && r.spec.checkpoint == Checkpoint::none) source = &r;
    QVERIFY(source);
    SweepSpec tp;
    tp.name = "tp";
    tp.base = source->spec;
    tp.axes = {{"tp", {"1", "2"}}};
    tp.backends = {"cpu.flash"};
    RecordedSweep recorded(store, tp);
    RunResult one = *source;
    one.id = 0;
    one.uuid.clear();
    one.trace.events = store.events(source->id);
    recorded.save(one);
    RunResult two = one;
    two.id = 0;
    two.uuid.clear();
    two.spec.tp = 2;
    two.trace.events = twoRanks(one.trace.events);
    two.facts["tp.ranks"] = "2";
    int64_t largest = 0;
    for (uint32_t d : {0u, 1u}) {
      const MemoryTimeline timeline(two.trace.events, {EventSource::allocator, std::nullopt, d});
      rank_peak_[d] = timeline.peakBytes();
      largest = std::max(largest, timeline.peakBytes());
      const std::string prefix = "tp.rank" + std::to_string(d) + ".";
      two.facts[prefix + "peak_bytes"] = std::to_string(timeline.peakBytes());
      two.facts[prefix + "seconds"] = "0.01";
      two.facts[prefix + "comm_share"] = "0.1";
    }
    two.memory.measured_peak = largest;  // the run's peak: its largest rank's
    recorded.save(two);
    recorded.finish(false);
    tp_run_ = two.id;
    tp_ = loadSweepSnapshot(store, recorded.id());
    QVERIFY(tp_);
    QCOMPARE(tp_->runs.size(), size_t{2});
    QVERIFY(rank_peak_[1] > rank_peak_[0]);
  }

  void memoryViewChartsLayersWhereTheyVary() {
    MemoryView view;
    view.resize(1400, 600);
    view.show();
    // A heads x seq sweep: the two charts as ever, no layers chart.
    view.setSweeps({plain_});
    QCOMPARE(view.plots(), (QList<QCustomPlot*>{view.headsPlot(), view.seqPlot()}));
    QVERIFY(view.layersPlot()->isHidden());
    QVERIFY(view.series(XField::layers).empty());
    // The stack, at fixed heads and seq: its chart against layers (a heads or seq chart would be a
    // column of dots), which exports and the report draw.
    view.setSweeps({stack_});
    QCOMPARE(view.plots(), (QList<QCustomPlot*>{view.layersPlot()}));
    QVERIFY(!view.layersPlot()->isHidden());
    QVERIFY(view.headsPlot()->isHidden() && view.seqPlot()->isHidden());
    QCOMPARE(view.exportColumns(), 1);
    // A series per backend and checkpoint, with a point per depth holding that run's peak.
    std::map<std::pair<std::string, Checkpoint>, std::map<double, int64_t>> want;
    for (const RunResult& r : stack_->runs)
      want[{r.backend, r.spec.checkpoint}][static_cast<double>(r.spec.layers)] = r.memory.measured_peak;
    const std::vector<PlotSeries>& series = view.series(XField::layers);
    QCOMPARE(series.size(), want.size());
    std::set<std::string> marker_keys;
    for (const PlotSeries& s : series) {
      QVERIFY(!s.points.empty());
      const Checkpoint ckpt = s.points.front().run->spec.checkpoint;
      QCOMPARE(s.marker_key, "checkpoint=" + std::string(toString(ckpt)));
      marker_keys.insert(s.marker_key);
      std::map<double, int64_t> got;
      for (const SeriesPoint& p : s.points) {
        QVERIFY(p.run->spec.checkpoint == ckpt);
        got[p.x] = p.measured;
      }
      QCOMPARE(got, (want[{s.backend, ckpt}]));
    }
    QCOMPARE(marker_keys, (std::set<std::string>{"checkpoint=none", "checkpoint=attention", "checkpoint=layer"}));
    // Drawn: the measured graphs at those points, one marker shape per checkpoint, in the key.
    QCustomPlot* plot = view.layersPlot();
    std::map<QString, std::set<int>> shapes;  // checkpoint -> marker shapes drawn
    int measured = 0;
    for (int i = 0; i < plot->graphCount(); ++i) {
      QCPGraph* g = plot->graph(i);
      if (g->property("kind").toString() != "measured") continue;
      ++measured;
      QCOMPARE(g->dataCount(), 3);
      const QVariantList ids = g->property("runIds").toList();
      const RunResult* r = findRun({stack_}, ids.front().toLongLong());
      QVERIFY(r);
      shapes[QString::fromUtf8(toString(r->spec.checkpoint).data())].insert(g->scatterStyle().shape());
    }
    QCOMPARE(measured, static_cast<int>(want.size()));
    std::set<int> all;
    for (const auto& [ckpt, seen] : shapes) {
      QCOMPARE(seen.size(), size_t{1});
      all.insert(*seen.begin());
    }
    QCOMPARE(all.size(), size_t{3});
    QStringList names = legendNames(plot->legend);
    for (const char* key : {"checkpoint=none", "checkpoint=attention", "checkpoint=layer"})
      QVERIFY2(names.contains(key), qPrintable(names.join(" | ")));
    // Back to the heads x seq sweep: as before.
    view.setSweeps({plain_});
    QCOMPARE(view.plots(), (QList<QCustomPlot*>{view.headsPlot(), view.seqPlot()}));
  }

  void memoryViewChartsTpWithEachRanksPeak() {
    MemoryView view;
    view.resize(1400, 600);
    view.show();
    view.setSweeps({tp_});
    QCOMPARE(view.plots(), (QList<QCustomPlot*>{view.tpPlot()}));
    const std::vector<PlotSeries>& series = view.series(XField::tp);
    QCOMPARE(series.size(), size_t{1});
    QCOMPARE(series.front().points.size(), size_t{2});
    const SeriesPoint& two = series.front().points.back();
    QCOMPARE(two.x, 2.0);
    QCOMPARE(two.measured, std::max(rank_peak_[0], rank_peak_[1]));  // the largest rank's peak
    // Its tooltip lists each rank's peak.
    QCustomPlot* plot = view.tpPlot();
    QCPGraph* measured = nullptr;
    for (int i = 0; i < plot->graphCount(); ++i)
      if (plot->graph(i)->property("kind").toString() == "measured") measured = plot->graph(i);
    QVERIFY(measured);
    SeriesPlot painter;  // the view's tooltip is the same SeriesPlot::tooltip over its own graphs
    const QVariantList ids = measured->property("runIds").toList();
    QCOMPARE(ids.back().toLongLong(), tp_run_);
    const std::vector<RankStats> ranks = rankStats(*two.run);
    QCOMPARE(ranks.size(), size_t{2});
    for (const RankStats& r : ranks) QCOMPARE(r.peak_bytes, rank_peak_[static_cast<uint32_t>(r.rank)]);
    painter.clear(plot);
    painter.add(plot, series.front(), Metric::memory, false);
    QCPGraph* drawn = nullptr;
    for (int i = 0; i < plot->graphCount(); ++i)
      if (plot->graph(i)->property("kind").toString() == "measured") drawn = plot->graph(i);
    const QString tip = painter.tooltip(drawn, 1);
    for (uint32_t d : {0u, 1u})
      QVERIFY2(tip.contains(QString("rank %1: peak %2").arg(d).arg(QString::fromStdString(formatBytes(rank_peak_[d])))),
               qPrintable(tip));
  }

  void timeAxisOffersLayersWhereTheyVary() {
    TimeView view;
    view.setSweeps({plain_});
    QCOMPARE(view.axisBox()->findData(static_cast<int>(XField::layers)), -1);
    view.setSweeps({stack_});
    const int layers = view.axisBox()->findData(static_cast<int>(XField::layers));
    QVERIFY(layers >= 0);
    QCOMPARE(view.axisBox()->findData(static_cast<int>(XField::tp)), -1);
    view.axisBox()->setCurrentIndex(layers);
    QCOMPARE(view.latencyPlot()->xAxis->label(), view.axisBox()->itemText(layers));
    view.setSweeps({tp_});
    QVERIFY(view.axisBox()->findData(static_cast<int>(XField::tp)) >= 0);
    QCOMPARE(view.axisBox()->findData(static_cast<int>(XField::layers)), -1);
  }

  void breakdownStacksEachLayersPhases() {
    BreakdownView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSweeps({stack_});
    Store store(db_, StoreMode::read);
    const std::vector<int64_t>& bars = view.phaseBarRuns();
    QCOMPARE(bars.size(), stack_->runs.size());
    for (size_t i = 0; i < bars.size(); ++i) {
      const RunResult* r = findRun({stack_}, bars[i]);
      const std::vector<PhaseStats> rows = summarizePhases(store.events(r->id));
      const std::vector<PhaseSegment>& segments = view.phaseBarSegments()[i];
      // A 4-layer run's bar: a band per layer L1..L4, each its own phases; the shares add up.
      std::set<std::string> groups;
      double sum = 0;
      for (const PhaseSegment& s : segments) {
        groups.insert(s.group);
        sum += s.share;
      }
      QVERIFY2(std::abs(sum - 1.0) < 1e-9, qPrintable(QString::number(sum)));
      std::set<std::string> want{""};  // inputs, outside every layer
      if (r->spec.layers > 1)
        for (int64_t l = 1; l <= r->spec.layers; ++l) want.insert("L" + std::to_string(l));
      else
        QVERIFY(std::none_of(rows.begin(), rows.end(), [](const PhaseStats& p) { return isLayerPhase(p.name); }));
      QCOMPARE(groups, want);
      // Each layer's band is that layer's share of the run, and holds its projections and attention.
      for (const PhaseStats& p : rows) {
        if (p.depth != 0 || !isLayerPhase(p.name)) continue;
        double band = 0;
        std::set<std::string> inside;
        for (const PhaseSegment& s : segments)
          if (s.group == p.name) {
            band += s.share;
            inside.insert(s.phase);
          }
        QVERIFY2(std::abs(band - p.share) < 1e-9, p.name.c_str());
        for (const char* phase : {"qkv_proj", "out_proj", "qkv_proj_backward"})
          QVERIFY2(inside.count(phase), qPrintable(QString::fromStdString(p.name) + " lacks " + phase));
        if (r->spec.checkpoint != Checkpoint::none) QVERIFY2(inside.count("recompute"), p.name.c_str());
      }
    }
    // Drawn as such: a QCPBars per layer and phase, the layers named on the bars (wide enough at
    // 1400 px for 18 bars), one legend entry per phase.
    std::set<QString> layers;
    std::multiset<QString> in_legend;
    QCustomPlot* plot = view.phasePlot();
    for (int k = 0; k < plot->plottableCount(); ++k) {
      layers.insert(plot->plottable(k)->property("stackLayer").toString());
      if (plot->legend->hasItemWithPlottable(plot->plottable(k))) in_legend.insert(plot->plottable(k)->name());
    }
    QVERIFY2(layers == (std::set<QString>{"", "L1", "L2", "L3", "L4"}),
             qPrintable(QStringList(layers.begin(), layers.end()).join('|') + QString(" of %1").arg(plot->plottableCount())));
    for (const QString& name : in_legend) QCOMPARE(in_legend.count(name), size_t{1});
    plot->replot();
    shoot(view, "stack-breakdown");
    const QStringList shown = view.shownLayerLabels();
    for (const char* layer : {"L1", "L2", "L3", "L4"}) QVERIFY2(shown.contains(layer), qPrintable(shown.join(' ')));
    // The hover of a layer's segment names the layer and its share.
    for (size_t i = 0; i < bars.size(); ++i)
      for (const PhaseSegment& s : view.phaseBarSegments()[i])
        if (s.group == "L3" && s.phase == "qkv_proj") {
          const QString tip = view.phaseTip(i, QString::fromStdString(s.key()));
          QVERIFY2(tip.contains("L3 qkv_proj:") && tip.contains("L3 in all:"), qPrintable(tip));
        }
    // The table of a 4-layer run lists L1..L4 with their phases under them.
    for (const RunResult& r : stack_->runs)
      if (r.spec.layers == 4) view.selectRun(r.id);
    QStringList names;
    for (int i = 0; i < view.phaseTable()->rowCount(); ++i) names << view.phaseTable()->item(i, 0)->text();
    for (const char* row : {"L1", "L2", "L3", "L4", "  L3/qkv_proj"}) QVERIFY2(names.contains(row), qPrintable(names.join('|')));
  }

  void breakdownGivesEachRankABarWithItsCommunication() {
    BreakdownView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.setSweeps({tp_});
    view.selectRun(tp_run_);
    // The tp 1 run, then the tp 2 run's two ranks.
    QCOMPARE(view.phaseBarRuns(), (std::vector<int64_t>{tp_->runs.front().id, tp_run_, tp_run_}));
    const std::vector<TraceEvent> events = Store(db_, StoreMode::read).events(tp_run_);
    for (uint32_t d : {0u, 1u}) {
      std::vector<TraceEvent> mine;
      for (const TraceEvent& e : events)
        if (e.device == d) mine.push_back(e);
      const std::vector<PhaseStats> rows = summarizePhases(mine);
      int64_t top = 0, comm = 0;
      for (const PhaseStats& p : rows) {
        if (p.depth == 0) top += p.total_ns;
        if (isCommPhase(p.name)) comm += p.total_ns;
      }
      QVERIFY(comm > 0);
      double share = 0;
      for (const PhaseSegment& s : view.phaseBarSegments()[1 + d])
        if (s.phase == kCommSegment) share += s.share;
      QVERIFY2(std::abs(share - static_cast<double>(comm) / static_cast<double>(top)) < 1e-9,
               qPrintable(QString("rank %1: %2").arg(d).arg(share)));
      // Taken out of the phase it was inside: L2's out_proj segment is out_proj less its comm.
      int64_t out_proj = 0, its_comm = 0;
      for (const PhaseStats& p : rows) {
        if (p.name == "L2/out_proj") out_proj = p.total_ns;
        if (p.name == "L2/out_proj/comm") its_comm = p.total_ns;
      }
      QVERIFY(out_proj > 0 && its_comm > 0);
      bool seen = false;
      for (const PhaseSegment& s : view.phaseBarSegments()[1 + d])
        if (s.key() == "L2/out_proj") {
          seen = true;
          QCOMPARE(s.total_ns, out_proj - its_comm);
        }
      QVERIFY(seen);
    }
    // The communication segments: hatched, one legend entry.
    int hatched = 0;
    QCustomPlot* plot = view.phasePlot();
    for (int k = 0; k < plot->plottableCount(); ++k)
      if (auto* b = qobject_cast<QCPBars*>(plot->plottable(k)); b && b->name() == "communication") {
        QCOMPARE(b->brush().style(), Qt::BDiagPattern);
        ++hatched;
      }
    QVERIFY(hatched >= 1);
    const auto ticks = plot->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
    QVERIFY(ticks->ticks().value(1).contains("rank 0") && ticks->ticks().value(2).contains("rank 1"));
    // The table: core's rows for the run, as the CLI prints them, its communication among them.
    const std::vector<PhaseStats> want = summarizePhases(events);
    QCOMPARE(view.phaseTable()->rowCount(), static_cast<int>(want.size()));
    QStringList names;
    for (int i = 0; i < view.phaseTable()->rowCount(); ++i) {
      names << view.phaseTable()->item(i, 0)->text();
      QCOMPARE(names.back(), phaseCells(want[static_cast<size_t>(i)])[0]);
    }
    QVERIFY2(names.contains("    L2/out_proj/comm"), qPrintable(names.join('|')));
    shoot(view, "tp-breakdown");
    // The memory bar: each rank's measured peak.
    std::set<double> peaks;
    for (int k = 0; k < view.plots()[0]->plottableCount(); ++k)
      if (auto* b = qobject_cast<QCPBars*>(view.plots()[0]->plottable(k)); b && b->data()->begin()->key >= 2)
        peaks.insert(b->data()->begin()->value);
    QCOMPARE(peaks, (std::set<double>{static_cast<double>(rank_peak_[0]), static_cast<double>(rank_peak_[1])}));
  }

  void timelineDrawsACurveAndLanesPerRank() {
    TimelineView view;
    view.setEventSource(loader());
    view.resize(1400, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSweeps({tp_});
    view.selectRun(tp_run_);
    QCOMPARE(view.runBox()->currentData().toLongLong(), tp_run_);
    view.plot()->replot();
    // Two curves, each its rank's, named in the memory rect's legend.
    const QList<QCPGraph*> curves = view.memoryCurves();
    QCOMPARE(curves.size(), 2);
    QCOMPARE(legendNames(view.memoryLegend()), (QStringList{"rank 0", "rank 1"}));
    QVERIFY(view.memoryLegend()->visible());
    QCOMPARE(maxValue(curves[0]), static_cast<double>(rank_peak_[0]));
    QCOMPARE(maxValue(curves[1]), static_cast<double>(rank_peak_[1]));
    QVERIFY(curves[0]->pen().color() != curves[1]->pen().color());
    // The bands and the snapshot: the rank with the largest peak.
    QCOMPARE(view.bandedRank(), 1);
    QCOMPARE(view.memoryTimeline().peakBytes(), rank_peak_[1]);
    // Each rank's phases in lanes of its own, rank 0's first; communication in a colour of its own.
    QStringList lanes;
    const auto ticks = view.laneRect()->axis(QCPAxis::atLeft)->ticker().dynamicCast<QCPAxisTickerText>();
    for (auto it = ticks->ticks().cbegin(); it != ticks->ticks().cend(); ++it) lanes.prepend(it.value());  // top first
    const int r0_layers = static_cast<int>(lanes.indexOf(QString("rank 0 \u00b7 layers")));
    const int r1_layers = static_cast<int>(lanes.indexOf(QString("rank 1 \u00b7 layers")));
    const int r0_comm = static_cast<int>(lanes.indexOf(QString("rank 0 \u00b7 comm")));
    const int r1_comm = static_cast<int>(lanes.indexOf(QString("rank 1 \u00b7 comm")));
    QVERIFY2(r0_layers > 0 && r1_layers > r0_layers && r0_comm > 0 && r1_comm > r0_comm, qPrintable(lanes.join('|')));
    QColor comm, other;
    for (int l = 0; l < view.laneCount(); ++l) {
      const QString& name = lanes[l];
      if (name == QString("rank 1 \u00b7 comm")) comm = view.laneGraph(l)->brush().color();
      if (name == QString("rank 1 \u00b7 phases")) other = view.laneGraph(l)->brush().color();
    }
    QVERIFY(comm.isValid() && other.isValid() && comm != other);
    // The passes are rank 0's: one warm-up and two repetitions, not a pass per rank.
    const std::vector<PassRange> passes = passRanges(Store(db_, StoreMode::read).events(tp_run_), 1, 2);
    QCOMPARE(passes.size(), size_t{3});
    shoot(view, "tp-timeline");
    // A run on one device keeps its single curve.
    view.selectRun(tp_->runs.front().id);
    QCOMPARE(view.memoryCurves().size(), 1);
    QVERIFY(!view.memoryLegend()->visible());
  }

  void stackPassesAndLayerLane() {
    // A 4-layer training run: each layer runs twice a pass (forward, backward), and a pass starts
    // only at L1's forward; the layers share one lane, named on their slices.
    const RunResult* deep = nullptr;
    for (const RunResult& r : stack_->runs)
      if (r.spec.layers == 4 && r.spec.checkpoint == Checkpoint::layer && r.backend == "cpu.reference") deep = &r;
    QVERIFY(deep);
    const std::vector<TraceEvent> events = Store(db_, StoreMode::read).events(deep->id);
    const std::vector<PassRange> passes = passRanges(events, 1, 2);
    QCOMPARE(passes.size(), size_t{3});
    QCOMPARE(QString::fromStdString(passes[0].label), QString("warm-up 1"));
    QCOMPARE(QString::fromStdString(passes[2].label), QString("rep 2"));
    const std::vector<LaneLayout> lanes = layoutLanes(events, passes, 0);
    int layer_lanes = 0;
    for (const LaneLayout& l : lanes) {
      if (l.kind == LaneLayout::Kind::layers) {
        ++layer_lanes;
        QCOMPARE(l.intervals.size(), size_t{4 * 2 * 3});  // 4 layers, forward and backward, 3 passes
      }
      QVERIFY(l.kind != LaneLayout::Kind::phase || !isLayerPhase(l.phase));
    }
    QCOMPARE(layer_lanes, 1);
    TimelineView view;
    view.setEventSource(loader());
    view.resize(1600, 900);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setSweeps({stack_});
    view.selectRun(deep->id);
    // One pass across the lanes: every layer wide enough to be named.
    int64_t t0 = INT64_MAX;
    for (const TraceEvent& e : events) t0 = std::min(t0, e.start_ns);
    view.setTimeRange(static_cast<double>(passes[1].start_ns - t0), static_cast<double>(passes[1].end_ns - t0));
    const QStringList labels = view.sliceLabels();
    for (const char* layer : {"L1", "L2", "L3", "L4"}) QVERIFY2(labels.contains(layer), qPrintable(labels.join(' ')));
    // The bands' names never overprint one another, over one pass or the whole run (each layer's
    // P and dS come and go many times over), and on the frame drawn right after the plot is
    // narrowed: the names are placed for the width that frame lays out, not the one before.
    auto checkNoOverprint = [&](const QString& what, bool expect_labels) {
      view.plot()->replot();
      std::vector<QRectF> boxes;
      QStringList texts;
      for (int i = 0; i < view.plot()->itemCount(); ++i) {
        auto* text = qobject_cast<QCPItemText*>(view.plot()->item(i));
        if (!text || text->clipAxisRect() != view.memoryRect()) continue;
        const QFontMetricsF metrics(text->font());
        const QPointF at = text->position->pixelPosition();
        boxes.emplace_back(at.x() + text->padding().left(), at.y() - metrics.height() / 2,
                           metrics.horizontalAdvance(text->text()), metrics.height());
        texts << text->text();
      }
      QVERIFY2(!expect_labels || !boxes.empty(), qPrintable(what));
      auto box = [&](size_t i) {
        const QRectF& r = boxes[i];
        return QString("'%1' at x %2-%3, y %4-%5").arg(texts[static_cast<qsizetype>(i)]).arg(r.left()).arg(r.right())
            .arg(r.top()).arg(r.bottom());
      };
      for (size_t a = 0; a < boxes.size(); ++a)
        for (size_t b = a + 1; b < boxes.size(); ++b)
          QVERIFY2(!boxes[a].intersects(boxes[b]), qPrintable(QString("%1: %2 and %3 overprint").arg(what, box(a), box(b))));
      QCOMPARE(boxes.size(), static_cast<size_t>(view.bandLabels().size()));
    };
    checkNoOverprint("pass", true);
    if (QTest::currentTestFailed()) return;
    view.setTimeRange(0, static_cast<double>(events.back().end_ns - t0));
    checkNoOverprint("run", false);
    if (QTest::currentTestFailed()) return;
    view.setTimeRange(static_cast<double>(passes[1].start_ns - t0), static_cast<double>(passes[1].end_ns - t0));
    const int wide = view.memoryRect()->width();
    view.resize(1000, 900);  // no events processed before the next frame
    checkNoOverprint("pass, narrowed", true);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(view.memoryRect()->width() < wide - 400, qPrintable(QString("%1 -> %2 px").arg(wide).arg(view.memoryRect()->width())));
  }

 private:
  PhaseSummaries::EventLoader loader() const {
    const std::string db = db_;
    return [db](int64_t id) { return Store(db, StoreMode::read).events(id); };
  }

  QTemporaryDir dir_;
  std::string db_;
  SweepSnapshotPtr stack_, plain_, tp_;
  int64_t tp_run_ = 0;
  std::map<uint32_t, int64_t> rank_peak_;
};

ATTNSCOPE_UI_TEST_MAIN(TestStackViews)
#include "test_stack_views.moc"
