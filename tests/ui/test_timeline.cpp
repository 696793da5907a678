// The timeline with a million events: what is drawn stays at pixel resolution, the drawn
// memory curve still reaches the true peak, and the two x-axes zoom and pan together.

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QCheckBox>
#include <QTableWidget>
#include <QTest>
#include <QWheelEvent>
#include <qcustomplot.h>

#include "ui/timeline_view.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

double maxValue(QCPGraph* g) {
  double m = 0;
  for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it) m = std::max(m, it->value);
  return m;
}

// n kernels on two streams and n alloc/free pairs of 1 KiB, with one 1 GiB spike at spike_ns.
std::vector<TraceEvent> syntheticTrace(int n, int64_t spike_ns) {
  std::vector<TraceEvent> ev;
  ev.reserve(static_cast<size_t>(n) * 3 + 2);
  for (int i = 0; i < n; ++i) {
    TraceEvent k;
    k.kind = EventKind::kernel;
    k.source = EventSource::host;
    k.stream = static_cast<uint32_t>(i % 2);
    k.start_ns = int64_t{i} * 100;
    k.end_ns = k.start_ns + 60;
    k.name = "kernel";
    ev.push_back(k);
    TraceEvent a;
    a.kind = EventKind::alloc;
    a.source = EventSource::allocator;
    a.start_ns = a.end_ns = int64_t{i} * 100 + 10;
    a.address = 0x1000 + static_cast<uint64_t>(i) * 4096;
    a.bytes = 1024;
    ev.push_back(a);
    TraceEvent f = a;
    f.kind = EventKind::free;
    f.start_ns = f.end_ns = a.start_ns + 50;
    ev.push_back(f);
  }
  TraceEvent spike;
  spike.kind = EventKind::alloc;
  spike.source = EventSource::allocator;
  spike.start_ns = spike.end_ns = spike_ns;
  spike.address = 0xdead0000;
  spike.bytes = int64_t{1} << 30;
  ev.push_back(spike);
  TraceEvent gone = spike;
  gone.kind = EventKind::free;
  gone.start_ns = gone.end_ns = spike_ns + 1;  // live for one nanosecond: far below a pixel
  ev.push_back(gone);
  return ev;
}

}  // namespace

class TestTimeline : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void millionEventsKeepThePeak() {
    TimelineView view;
    view.resize(1200, 700);
    view.show();
    const int n = 340000;  // ~1,020,000 events
    const int64_t spike = 12345678;
    view.setEvents(syntheticTrace(n, spike));
    view.plot()->replot();
    view.setTimeRange(0, n * 100.0);
    QCOMPARE(view.laneCount(), 2);
    const int64_t peak = view.memoryTimeline().peakBytes();
    QVERIFY(peak >= (int64_t{1} << 30));
    // The drawn curve reaches the true peak although the spike lasts a nanosecond.
    QCOMPARE(maxValue(view.memoryGraph()), static_cast<double>(peak));
    const int width = std::max(view.laneRect()->width(), 50);
    QVERIFY2(view.memoryGraph()->dataCount() <= 2 * width + 4, qPrintable(QString::number(view.memoryGraph()->dataCount())));
    for (int l = 0; l < view.laneCount(); ++l) QVERIFY(view.laneGraph(l)->dataCount() <= 2 * width + 3);

    // Zoom into the spike: both axes follow, the peak is still drawn, detail increases.
    view.setTimeRange(spike - 5000, spike + 5000);
    const QCPRange lanes = view.laneRect()->axis(QCPAxis::atBottom)->range();
    const QCPRange memory = view.memoryRect()->axis(QCPAxis::atBottom)->range();
    QCOMPARE(lanes.lower, memory.lower);
    QCOMPARE(lanes.upper, memory.upper);
    QCOMPARE(maxValue(view.memoryGraph()), static_cast<double>(peak));
    QVERIFY(view.laneGraph(0)->dataCount() > 10);  // 100 ns kernels resolve at this zoom

    // Panning the memory axis moves the lanes too.
    view.memoryRect()->axis(QCPAxis::atBottom)->setRange(0, 1000);
    QCOMPARE(view.laneRect()->axis(QCPAxis::atBottom)->range().upper, 1000.0);
    QVERIFY(maxValue(view.memoryGraph()) <= 1024.0);  // away from the spike
  }

  void buffersAreStackedBandsNamedByThePlan() {
    // q and k live together, S on top of them; at t=20 P is allocated as q and S are freed:
    // allocations first (the curve's tie rule, so no peak is understated), so P stacks on all.
    auto ev = [](EventKind kind, int64_t t, uint64_t address, int64_t bytes, const char* name) {
      TraceEvent e;
      e.kind = kind;
      e.source = EventSource::allocator;
      e.start_ns = e.end_ns = t;
      e.address = address;
      e.bytes = bytes;
      e.name = name;
      return e;
    };
    std::vector<TraceEvent> events{ev(EventKind::alloc, 0, 1, 100, "q"),    ev(EventKind::alloc, 0, 2, 100, "k"),
                                   ev(EventKind::alloc, 10, 3, 1000, "S"),  ev(EventKind::free, 20, 1, 100, "q"),
                                   ev(EventKind::free, 20, 3, 1000, "S"),   ev(EventKind::alloc, 20, 4, 500, "P"),
                                   ev(EventKind::free, 40, 4, 500, "P")};
    // A CUPTI record of the same buffer is not a second band (one source, as the curve).
    TraceEvent cupti = events[2];
    cupti.source = EventSource::cupti;
    events.push_back(cupti);
    TimelineView view;
    view.setEvents(events);
    const auto& bands = view.bufferBands();
    QCOMPARE(bands.size(), size_t(4));
    QCOMPARE(QString::fromStdString(bands[2].name), QString("S"));
    QCOMPARE(bands[2].base, int64_t(200));
    QCOMPARE(bands[2].end_ns, int64_t(20));
    QCOMPARE(QString::fromStdString(bands[3].name), QString("P"));
    QCOMPARE(bands[3].base, int64_t(1200));
    QVERIFY(!bands[1].freed);                // k is never freed: its band runs to the end
    QCOMPARE(bands[1].end_ns, int64_t(40));
    // Blocks freed below a band move it down: k drops onto the floor when q goes; P, which
    // stacked on q, k and S at t=20, sits on k alone once q and S are freed at that tick.
    QCOMPARE(baseAt(bands[1], 19), int64_t(100));
    QCOMPARE(baseAt(bands[1], 20), int64_t(0));
    QCOMPARE(baseAt(bands[3], 20), int64_t(100));
    const auto k_pieces = piecesOf(bands[1]);
    QCOMPARE(k_pieces.size(), size_t(2));
    QCOMPARE(k_pieces[0].end_ns, int64_t(20));
    QCOMPARE(k_pieces[1].base, int64_t(0));
    const auto p_pieces = piecesOf(bands[3]);  // the moment at 1200 has no length: one piece
    QCOMPARE(p_pieces.size(), size_t(1));
    QCOMPARE(p_pieces[0].base, int64_t(100));
    // At every moment the top band's top is the live-bytes curve: nothing floats above it.
    for (int64_t t : {5, 15, 25, 39}) {
      int64_t top = 0;
      for (const auto& b : bands)
        if (b.start_ns <= t && t < b.end_ns) top = std::max(top, baseAt(b, t) + b.bytes);
      int64_t live = 0;
      for (const auto& p : view.memoryTimeline().curve())
        if (p.t_ns <= t) live = p.bytes;
      QCOMPARE(top, live);
    }
    // Off: no bands, the curve is filled again.
    auto* box = view.findChild<QCheckBox*>("timelineBuffers");
    QVERIFY(box);
    box->setChecked(false);
    QVERIFY(view.bufferBands().empty());
  }

  void passesAreInferredFromThePhases() {
    // cpu.reference's shape: inputs once, then scores / softmax / output per pass, with a phase
    // nested inside softmax that must not start a pass of its own.
    auto phase = [](const char* name, int64_t start, int64_t end) {
      TraceEvent e;
      e.kind = EventKind::phase;
      e.name = name;
      e.start_ns = start;
      e.end_ns = end;
      return e;
    };
    std::vector<TraceEvent> ev{phase("inputs", 0, 5)};
    for (int64_t p = 0; p < 3; ++p) {
      const int64_t t = 10 + p * 100;
      ev.push_back(phase("scores", t, t + 30));
      ev.push_back(phase("softmax", t + 30, t + 60));
      ev.push_back(phase("scores", t + 35, t + 40));  // nested: not a pass
      ev.push_back(phase("output", t + 60, t + 90));
    }
    const auto passes = passRanges(ev, 1);
    QCOMPARE(passes.size(), size_t(3));
    QCOMPARE(QString::fromStdString(passes[0].label), QString("warm-up 1"));
    QCOMPARE(QString::fromStdString(passes[1].label), QString("rep 1"));
    QCOMPARE(QString::fromStdString(passes[2].label), QString("rep 2"));
    QCOMPARE(passes[1].start_ns, int64_t(110));
    QCOMPARE(passes[1].end_ns, int64_t(200));
    QVERIFY(passRanges({phase("inputs", 0, 5)}, 1).empty());
    // A phase opened a moment before the previous one closed still belongs to the pass.
    const auto overlapping = passRanges({phase("scores", 0, 30), phase("softmax", 30, 60), phase("pv", 59, 90),
                                         phase("scores", 100, 130)},
                                        0);
    QCOMPARE(overlapping.size(), size_t(2));
    QCOMPARE(overlapping[0].end_ns, int64_t(90));
    // The view draws them as a lane of their own, on top.
    TimelineView view;
    view.setEvents(ev);
    QCOMPARE(view.laneCount(), 5);  // passes, then inputs, scores, softmax, output
    // Consecutive passes are separate bars: between one pass's end and the next one's start the
    // lane drops to its base (even when they are closer than a pixel: 10 ns apart here).
    view.resize(1000, 600);
    view.setTimeRange(0, 320);
    QCPGraph* lane = view.laneGraph(0);
    const double base = view.laneCount() - 1;  // the top lane's base line
    int bars = 0;
    for (auto it = lane->data()->constBegin(); it != lane->data()->constEnd(); ++it) {
      if (it->value > base) {
        ++bars;
        auto next = it + 1;
        QVERIFY(next != lane->data()->constEnd());
        QCOMPARE(next->value, base);   // the bar ends...
        QVERIFY(next->key > it->key);  // ...after it starts
      }
    }
    QCOMPARE(bars, 3);
  }

  void torchPassesSeparateWarmupRepsAndTheProfiledCall() {
    auto phase = [](const char* name, int64_t start, int64_t end) {
      TraceEvent e;
      e.kind = EventKind::phase;
      e.name = name;
      e.start_ns = start;
      e.end_ns = end;
      return e;
    };
    using K = PassRange::Kind;
    // torch's forward: inputs loaded once, one "sdpa call" per pass (1 warm-up, 3 timed), then the
    // extra, profiled call whose allocations are the memory curve.
    std::vector<TraceEvent> torch{phase("load inputs into torch", 0, 5)};
    for (int64_t p = 0; p < 4; ++p) torch.push_back(phase("sdpa call", 10 + p * 100, 90 + p * 100));
    torch.push_back(phase("profiled call", 500, 600));
    auto passes = passRanges(torch, 1, 3);
    QCOMPARE(passes.size(), size_t(5));
    QCOMPARE(QString::fromStdString(passes[0].label), QString("warm-up 1"));
    QVERIFY(passes[0].kind == K::warmup);
    for (int i = 1; i <= 3; ++i) {
      QCOMPARE(QString::fromStdString(passes[static_cast<size_t>(i)].label), QString("rep %1").arg(i));
      QVERIFY(passes[static_cast<size_t>(i)].kind == K::rep);
    }
    QCOMPARE(QString::fromStdString(passes[4].label), QString("profiled call"));
    QVERIFY(passes[4].kind == K::profiled);
    QCOMPARE(passes[4].start_ns, int64_t(500));
    // Without a phase of that name: the pass after warm-up + reps is the profiled one, and what
    // follows it in that call belongs to it.
    std::vector<TraceEvent> layer;
    for (int64_t p = 0; p < 5; ++p) {
      const int64_t t = p * 100;
      layer.push_back(phase("qkv_proj", t, t + 30));
      layer.push_back(phase("attention", t + 30, t + 70));
      layer.push_back(phase("out_proj", t + 70, t + 90));
    }
    passes = passRanges(layer, 1, 3);
    QCOMPARE(passes.size(), size_t(5));
    QVERIFY(passes[3].kind == K::rep);
    QVERIFY(passes[4].kind == K::profiled);
    QCOMPARE(passes[4].start_ns, int64_t(400));
    QCOMPARE(passes[4].end_ns, int64_t(490));
    // torch's layer timed as one "layer call" and profiled op by op: the first phase no timed
    // pass had starts the profiled call.
    std::vector<TraceEvent> gpu_layer;
    for (int64_t p = 0; p < 3; ++p) gpu_layer.push_back(phase("layer call", p * 100, p * 100 + 80));
    gpu_layer.push_back(phase("qkv_proj", 300, 330));
    gpu_layer.push_back(phase("attention", 330, 370));
    passes = passRanges(gpu_layer, 1, 2);
    QCOMPARE(passes.size(), size_t(4));
    QVERIFY(passes[3].kind == K::profiled);
    QCOMPARE(passes[3].end_ns, int64_t(370));
    // reps unknown (-1): every later pass is a rep, as before.
    passes = passRanges(layer, 1);
    QCOMPARE(passes.size(), size_t(5));
    QVERIFY(passes[4].kind == K::rep);
  }

  void nestedOpsGoOneRowPerDepth() {
    // torch's ops on one thread: sdpa holds matmul, which holds bmm; softmax follows matmul
    // inside sdpa; a later op at the top. Deeper than kMaxOpDepth - 1 shares the last row.
    auto op = [](const char* name, int64_t start, int64_t end) {
      TraceEvent e;
      e.kind = EventKind::kernel;
      e.source = EventSource::host;
      e.stream = 5;
      e.name = name;
      e.start_ns = start;
      e.end_ns = end;
      return e;
    };
    const std::vector<TraceEvent> events{op("aten::scaled_dot_product_attention", 0, 100),
                                         op("aten::matmul", 10, 50),
                                         op("aten::bmm", 20, 40),
                                         op("aten::_softmax", 55, 80),
                                         op("aten::add", 120, 130),
                                         op("d3", 22, 38),
                                         op("d4", 24, 36)};
    const auto lanes = layoutLanes(events, {}, 0);
    QCOMPARE(lanes.size(), size_t(kMaxOpDepth));
    for (size_t d = 0; d < lanes.size(); ++d) {
      QVERIFY(lanes[d].kind == LaneLayout::Kind::cpu_thread);
      QCOMPARE(lanes[d].depth, static_cast<int>(d));
    }
    QCOMPARE(lanes[0].items, (std::vector<size_t>{0, 4}));
    QCOMPARE(lanes[1].items, (std::vector<size_t>{1, 3}));
    QCOMPARE(lanes[2].items, (std::vector<size_t>{2}));
    QCOMPARE(lanes[3].items, (std::vector<size_t>{5, 6}));  // depth 3 and 4: one row
    // The view names the inner rows by depth and names the slices wide enough to hold a name.
    TimelineView view;
    view.resize(1200, 700);
    view.show();
    view.setEvents(events);
    QCOMPARE(view.laneCount(), kMaxOpDepth);
    view.setTimeRange(0, 140);
    const QStringList labels = view.sliceLabels();
    // Elided to its slice's width, but named.
    QVERIFY2(std::any_of(labels.begin(), labels.end(), [](const QString& l) { return l.startsWith("scaled_"); }),
             qPrintable(labels.join(", ")));
    QVERIFY2(labels.contains("matmul"), qPrintable(labels.join(", ")));
    QVERIFY2(labels.contains("add"), qPrintable(labels.join(", ")));  // aten:: is dropped
  }

  void lanesAreLaidOutWithoutTheWidget() {
    // Phases (two names, the second first seen later), kernels on two CUDA streams of device 1
    // and on a host thread, given out of order; allocations get no lane.
    auto ev = [](EventKind kind, EventSource source, uint32_t device, uint32_t stream, const char* name, int64_t start,
                 int64_t end) {
      TraceEvent e;
      e.kind = kind;
      e.source = source;
      e.device = device;
      e.stream = stream;
      e.name = name;
      e.start_ns = start;
      e.end_ns = end;
      return e;
    };
    const std::vector<TraceEvent> events = {
        ev(EventKind::kernel, EventSource::cupti, 1, 7, "k", 300, 310),   // 0
        ev(EventKind::phase, EventSource::host, 0, 0, "scores", 100, 200),  // 1
        ev(EventKind::kernel, EventSource::cupti, 1, 3, "k", 150, 160),   // 2
        ev(EventKind::alloc, EventSource::allocator, 0, 0, "", 120, 120),  // 3: no lane
        ev(EventKind::kernel, EventSource::host, 0, 2, "k", 140, 145),    // 4
        ev(EventKind::phase, EventSource::host, 0, 0, "softmax", 200, 250),  // 5
        ev(EventKind::kernel, EventSource::cupti, 1, 7, "k", 250, 260),   // 6: before event 0 in its lane
        ev(EventKind::phase, EventSource::host, 0, 0, "scores", 260, 280),  // 7
    };
    const auto passes = passRanges(events, 0);
    QCOMPARE(passes.size(), size_t(2));
    const auto lanes = layoutLanes(events, passes, 100);
    QCOMPARE(lanes.size(), size_t(6));
    using K = LaneLayout::Kind;
    QVERIFY(lanes[0].kind == K::passes);
    QVERIFY(lanes[1].kind == K::phase && lanes[1].phase == "scores");
    QVERIFY(lanes[2].kind == K::phase && lanes[2].phase == "softmax");
    // The rest by (source, device, stream): cupti before host in EventSource's order.
    QVERIFY(lanes[3].kind == K::cuda_stream && lanes[3].device == 1 && lanes[3].stream == 3);
    QVERIFY(lanes[4].kind == K::cuda_stream && lanes[4].device == 1 && lanes[4].stream == 7);
    QVERIFY(lanes[5].kind == K::cpu_thread && lanes[5].stream == 2);
    // Intervals relative to t0, sorted by start, each naming its event (its pass on the pass lane).
    QCOMPARE(lanes[1].intervals, (std::vector<Interval>{{0, 100}, {160, 180}}));
    QCOMPARE(lanes[1].items, (std::vector<size_t>{1, 7}));
    QCOMPARE(lanes[4].intervals, (std::vector<Interval>{{150, 160}, {200, 210}}));
    QCOMPARE(lanes[4].items, (std::vector<size_t>{6, 0}));
    QCOMPARE(lanes[0].items, (std::vector<size_t>{0, 1}));
    QCOMPARE(lanes[0].intervals.front().start, 0.0);
    // The view shows exactly these lanes.
    TimelineView view;
    view.setEvents(events);
    QCOMPARE(view.laneCount(), 6);
  }

  void wheelZoomKeepsTheTimeUnderTheCursor() {
    TimelineView view;
    view.resize(1200, 700);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setEvents(syntheticTrace(2000, 50000));
    view.plot()->replot();
    QCPAxis* x = view.laneRect()->axis(QCPAxis::atBottom);
    const double run = x->range().size();
    const int px = view.laneRect()->left() + view.laneRect()->width() * 3 / 10;
    const QPoint at(px, view.laneRect()->center().y());
    const double t = x->pixelToCoord(px);
    auto wheel = [&](QPoint where, int delta) {
      QWheelEvent e(where, view.plot()->mapToGlobal(where), QPoint(), QPoint(0, delta), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
      QApplication::sendEvent(view.plot(), &e);
      view.plot()->replot();
    };
    for (int i = 0; i < 6; ++i) wheel(at, 120);
    QVERIFY2(x->range().size() < 0.5 * run, qPrintable(QString::number(x->range().size())));
    // The time under the cursor stays under it, within a pixel, after each relayout.
    QVERIFY2(std::abs(x->coordToPixel(t) - px) <= 1.0, qPrintable(QString::number(x->coordToPixel(t) - px)));
    QCOMPARE(view.memoryRect()->axis(QCPAxis::atBottom)->range().lower, x->range().lower);
    // On the memory rect too.
    const QPoint below(px, view.memoryRect()->center().y());
    for (int i = 0; i < 3; ++i) wheel(below, 120);
    QVERIFY(std::abs(x->coordToPixel(t) - px) <= 1.0);
    // Zooming out stops at the run (a 5 % margin either side), never an empty stretch beyond it.
    for (int i = 0; i < 40; ++i) wheel(at, -120);
    QVERIFY(x->range().lower >= -0.05 * run - 1 && x->range().upper <= 1.05 * run + 1);
    // W zooms in, S out, A and D pan by a fifth of the span.
    view.setTimeRange(1000, 2000);
    view.plot()->setFocus();
    QTest::keyClick(view.plot(), Qt::Key_W);
    QVERIFY(std::abs(x->range().size() - 800) < 1e-6);
    QTest::keyClick(view.plot(), Qt::Key_S);
    QVERIFY(std::abs(x->range().size() - 1000) < 1e-6);
    const double lo = x->range().lower;
    QTest::keyClick(view.plot(), Qt::Key_D);
    QCOMPARE(x->range().lower, lo + 200);
    QTest::keyClick(view.plot(), Qt::Key_A);
    QCOMPARE(x->range().lower, lo);
    // A right-drag zooms to the range it covers.
    view.plot()->replot();
    const int from = view.laneRect()->left() + 100, to = from + 300;
    const double t_from = x->pixelToCoord(from), t_to = x->pixelToCoord(to);
    QTest::mousePress(view.plot(), Qt::RightButton, {}, QPoint(from, at.y()));
    QTest::mouseRelease(view.plot(), Qt::RightButton, {}, QPoint(to, at.y()));
    QVERIFY(std::abs(x->range().lower - t_from) < 1e-6 && std::abs(x->range().upper - t_to) < 1e-6);
  }

  void snapshotListsWhatIsLiveAndAddsUpToTheCurve() {
    auto ev = [](EventKind kind, int64_t t, uint64_t address, int64_t bytes, const char* name) {
      TraceEvent e;
      e.kind = kind;
      e.source = EventSource::allocator;
      e.start_ns = e.end_ns = t;
      e.address = address;
      e.bytes = bytes;
      e.name = name;
      return e;
    };
    // The peak is at t=20, where P is allocated as q and S are freed (allocations first).
    std::vector<TraceEvent> events{ev(EventKind::alloc, 0, 1, 100, "q"),    ev(EventKind::alloc, 0, 2, 100, "k"),
                                   ev(EventKind::alloc, 10, 3, 1000, "S"),  ev(EventKind::free, 20, 1, 100, "q"),
                                   ev(EventKind::free, 20, 3, 1000, "S"),   ev(EventKind::alloc, 20, 4, 500, "P"),
                                   ev(EventKind::free, 40, 4, 500, "P")};
    TimelineView view;
    view.resize(1200, 800);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.setEvents(events);
    auto rows = [&] {
      std::vector<std::pair<QString, int64_t>> out;
      QTableWidget* table = view.snapshotTable();
      for (int r = 0; r < table->rowCount(); ++r)
        out.emplace_back(table->item(r, 0)->text(), table->item(r, 1)->data(Qt::UserRole).toLongLong());
      return out;
    };
    auto sum = [](const std::vector<std::pair<QString, int64_t>>& rs) {
      int64_t s = 0;
      for (const auto& r : rs) s += r.second;
      return s;
    };
    // Opened at the peak: its top contributors, largest first, adding up to the peak.
    QCOMPARE(view.snapshotTime(), 20.0);
    auto at_peak = rows();
    QCOMPARE(at_peak.size(), size_t(4));
    QCOMPARE(at_peak[0].first, QString("S"));
    QCOMPARE(at_peak[1].first, QString("P"));
    QCOMPARE(sum(at_peak), view.memoryTimeline().peakBytes());
    QCOMPARE(view.liveBytesAt(20), int64_t(1700));
    // Later: k and P.
    view.showSnapshot(25);
    QCOMPARE(rows().size(), size_t(2));
    QCOMPARE(sum(rows()), int64_t(600));
    // A click on the memory curve moves the snapshot there.
    view.setTimeRange(0, 40);
    view.plot()->replot();
    QCPAxis* mx = view.memoryRect()->axis(QCPAxis::atBottom);
    const QPoint click(static_cast<int>(mx->coordToPixel(15)), view.memoryRect()->center().y());
    QTest::mouseClick(view.plot(), Qt::LeftButton, {}, click);
    QVERIFY2(std::abs(view.snapshotTime() - 15) < 40.0 / view.memoryRect()->width() + 1e-9,
             qPrintable(QString::number(view.snapshotTime())));
    QCOMPARE(sum(rows()), int64_t(1200));  // q, k and S
    // More blocks than the bands keep (the largest 300): the rest is one row, so the table
    // still adds up to the curve.
    std::vector<TraceEvent> many;
    for (int i = 0; i < 350; ++i) many.push_back(ev(EventKind::alloc, i, 100 + static_cast<uint64_t>(i), 1024 + i, "x"));
    view.setEvents(many);
    const auto all = rows();
    QCOMPARE(all.size(), size_t(301));
    QCOMPARE(sum(all), view.memoryTimeline().peakBytes());
    QVERIFY(all.back().first.startsWith("smaller blocks"));
  }

  void emptyTrace() {
    TimelineView view;
    view.setEvents({});
    QCOMPARE(view.laneCount(), 0);
    QCOMPARE(view.memoryGraph()->dataCount(), 0);
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestTimeline)
#include "test_timeline.moc"
