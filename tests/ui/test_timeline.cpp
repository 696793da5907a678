// The timeline with a million events: what is drawn stays at pixel resolution, the drawn
// memory curve still reaches the true peak, and the two x-axes zoom and pan together.

#include <algorithm>

#include <QCheckBox>
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

  void emptyTrace() {
    TimelineView view;
    view.setEvents({});
    QCOMPARE(view.laneCount(), 0);
    QCOMPARE(view.memoryGraph()->dataCount(), 0);
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestTimeline)
#include "test_timeline.moc"
