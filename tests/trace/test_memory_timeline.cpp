// MemoryTimeline: known peaks, the equal-timestamp rule, anomalies, sources, pools, phases, a
// million events, and downsampling that keeps the peak.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>

#include "core/trace/memory_timeline.h"
#include "tests/trace/trace_builders.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {
const MemoryFilter kAllocatorDevice{EventSource::allocator, MemoryKind::device, std::nullopt};
}

TEST(MemoryTimeline, InterleavingHasKnownCurveAndPeak) {
  std::vector<TraceEvent> ev = {alloc(0, 0xA, 100), alloc(1, 0xB, 50), release(2, 0xA), alloc(3, 0xC, 200),
                                release(4, 0xB), release(5, 0xC)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  std::vector<MemoryPoint> want = {{0, 100}, {1, 150}, {2, 50}, {3, 250}, {4, 200}, {5, 0}};
  EXPECT_EQ(tl.curve(), want);
  EXPECT_EQ(tl.peakBytes(), 250);
  EXPECT_EQ(tl.peakNs(), 3);
  EXPECT_EQ(tl.finalBytes(), 0);
  EXPECT_EQ(tl.eventCount(), 6);
  EXPECT_TRUE(tl.anomalies().empty());
  EXPECT_TRUE(tl.poolCurve().empty());
}

TEST(MemoryTimeline, InputOrderDoesNotMatter) {
  std::vector<TraceEvent> ev = {release(5, 0xC), alloc(3, 0xC, 200), release(2, 0xA), alloc(0, 0xA, 100),
                                release(4, 0xB), alloc(1, 0xB, 50)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.peakBytes(), 250);
  EXPECT_EQ(tl.unknownFrees(), 0);
}

TEST(MemoryTimeline, EqualTimestampsNeverUnderstateThePeak) {
  // The free is listed first, at the same tick as a new allocation: both count at that tick.
  std::vector<TraceEvent> ev = {alloc(0, 0xA, 100), release(10, 0xA), alloc(10, 0xB, 100), release(20, 0xB)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.peakBytes(), 200);
  EXPECT_EQ(tl.peakNs(), 10);
  std::vector<MemoryPoint> want = {{0, 100}, {10, 200}, {10, 100}, {20, 0}};
  EXPECT_EQ(tl.curve(), want);
}

TEST(MemoryTimeline, FreeAndReallocOfOneAddressInOneTickIsNotADoubleAlloc) {
  std::vector<TraceEvent> ev = {alloc(0, 0xA, 100), release(5, 0xA), alloc(5, 0xA, 60), release(6, 0xA)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.doubleAllocs(), 0);
  EXPECT_EQ(tl.unknownFrees(), 0);
  EXPECT_EQ(tl.peakBytes(), 160);
  std::vector<MemoryPoint> want = {{0, 100}, {5, 160}, {5, 60}, {6, 0}};
  EXPECT_EQ(tl.curve(), want);
}

TEST(MemoryTimeline, UnknownFreesAreFlaggedAndIgnored) {
  std::vector<TraceEvent> ev = {release(1, 0xDEAD, 4096), alloc(2, 0xA, 10), release(3, 0xA), release(4, 0xA)};
  ev[0].name = "before capture";
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.unknownFrees(), 2);
  ASSERT_EQ(tl.anomalies().size(), 2u);
  EXPECT_EQ(tl.anomalies()[0].kind, MemoryAnomaly::Kind::unknown_free);
  EXPECT_EQ(tl.anomalies()[0].address, 0xDEADu);
  EXPECT_EQ(tl.anomalies()[0].name, "before capture");
  EXPECT_EQ(tl.anomalies()[1].t_ns, 4);
  EXPECT_EQ(tl.peakBytes(), 10);
  for (const auto& p : tl.curve()) EXPECT_GE(p.bytes, 0);
  EXPECT_EQ(tl.finalBytes(), 0);
}

TEST(MemoryTimeline, DoubleAllocIsFlaggedAndReplacesTheLostBlock) {
  std::vector<TraceEvent> ev = {alloc(0, 0xA, 100), alloc(1, 0xA, 40), release(2, 0xA)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.doubleAllocs(), 1);
  ASSERT_EQ(tl.anomalies().size(), 1u);
  EXPECT_EQ(tl.anomalies()[0].kind, MemoryAnomaly::Kind::double_alloc);
  EXPECT_EQ(tl.anomalies()[0].bytes, 40);
  EXPECT_EQ(tl.peakBytes(), 100);
  EXPECT_EQ(tl.finalBytes(), 0);
  EXPECT_EQ(tl.unknownFrees(), 0);
}

TEST(MemoryTimeline, SourcesAndKindsAreSeparable) {
  // The allocator and CUPTI both saw the same cudaMalloc; host memory sits beside it.
  std::vector<TraceEvent> ev = {alloc(0, 0xA, 100, EventSource::allocator),
                                alloc(1, 0xA, 128, EventSource::cupti),
                                alloc(2, 0xB, 64, EventSource::cupti),  // cuBLAS workspace, allocator never saw it
                                alloc(3, 0xC, 999, EventSource::allocator, MemoryKind::host),
                                alloc(4, 0xD, 32, EventSource::cupti, MemoryKind::pool),
                                release(5, 0xA, 0, EventSource::cupti),
                                release(6, 0xA, 0, EventSource::allocator)};
  MemoryTimeline a(ev, kAllocatorDevice);
  EXPECT_EQ(a.peakBytes(), 100);
  MemoryTimeline c(ev, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt});
  EXPECT_EQ(c.peakBytes(), 128 + 64 + 32);
  EXPECT_EQ(c.finalBytes(), 96);
  MemoryTimeline host(ev, MemoryFilter{std::nullopt, MemoryKind::host, std::nullopt});
  EXPECT_EQ(host.peakBytes(), 999);
  MemoryTimeline all(ev, MemoryFilter{});
  EXPECT_EQ(all.doubleAllocs(), 0);  // keyed by source: not the same block
  EXPECT_EQ(all.unknownFrees(), 0);
  EXPECT_EQ(all.peakBytes(), 100 + 128 + 64 + 999 + 32);
  MemoryTimeline dev1(ev, MemoryFilter{std::nullopt, std::nullopt, 1u});
  EXPECT_TRUE(dev1.curve().empty());
  EXPECT_EQ(dev1.peakBytes(), 0);
}

TEST(MemoryTimeline, PoolReservationHasItsOwnCurve) {
  std::vector<TraceEvent> ev = {memEvent(EventKind::pool_reserve, 0, 0x1000, 1 << 20, EventSource::cupti),
                                alloc(1, 0x1000, 4096, EventSource::cupti),
                                memEvent(EventKind::pool_reserve, 2, 0x1000, 1 << 20, EventSource::cupti),
                                release(3, 0x1000, 0, EventSource::cupti),
                                memEvent(EventKind::pool_release, 4, 0x1000, 1 << 20, EventSource::cupti),
                                memEvent(EventKind::pool_release, 5, 0x1000, 1 << 20, EventSource::cupti)};
  MemoryTimeline tl(ev, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt});
  EXPECT_EQ(tl.poolPeakBytes(), 2 << 20);
  EXPECT_EQ(tl.poolPeakNs(), 2);
  std::vector<MemoryPoint> pool = {{0, 1 << 20}, {2, 2 << 20}, {4, 1 << 20}, {5, 0}};
  EXPECT_EQ(tl.poolCurve(), pool);
  EXPECT_EQ(tl.peakBytes(), 4096);  // live bytes are not reservation
  std::vector<MemoryPoint> live = {{1, 4096}, {3, 0}};
  EXPECT_EQ(tl.curve(), live);
}

TEST(MemoryTimeline, PeakIsAttributedToTheInnermostPhase) {
  std::vector<TraceEvent> ev = {phase("prepare", 0, 10),   phase("scores", 10, 20), phase("softmax", 20, 30),
                                phase("tile 3", 22, 24),   phase("output", 30, 40), alloc(1, 0x1, 100),
                                alloc(12, 0x2, 1000),      release(19, 0x2),        alloc(23, 0x3, 2000),
                                release(24, 0x3),          alloc(26, 0x4, 500),     release(28, 0x4)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.peakBytes(), 2100);
  EXPECT_EQ(tl.peakNs(), 23);
  EXPECT_EQ(tl.peakPhase(), "tile 3");
  ASSERT_EQ(tl.phasePeaks().size(), 5u);
  std::map<std::string, PhasePeak> by;
  for (const auto& p : tl.phasePeaks()) by[p.name] = p;
  EXPECT_EQ(by["prepare"].peak_bytes, 100);
  EXPECT_EQ(by["prepare"].peak_ns, 1);
  EXPECT_EQ(by["scores"].peak_bytes, 1100);
  EXPECT_EQ(by["scores"].peak_ns, 12);
  EXPECT_EQ(by["softmax"].peak_bytes, 2100);
  EXPECT_EQ(by["tile 3"].peak_bytes, 2100);
  // Nothing happens inside "output": its peak is the level carried in.
  EXPECT_EQ(by["output"].peak_bytes, 100);
  EXPECT_EQ(by["output"].peak_ns, 30);
  EXPECT_EQ(tl.phasePeaks().front().name, "prepare");
}

TEST(MemoryTimeline, PeakOutsideEveryPhaseHasNoPhase) {
  std::vector<TraceEvent> ev = {phase("compute", 10, 20), alloc(1, 0x1, 100), release(5, 0x1)};
  MemoryTimeline tl(ev, kAllocatorDevice);
  EXPECT_EQ(tl.peakPhase(), "");
  EXPECT_EQ(tl.phasePeaks()[0].peak_bytes, 0);
}

namespace {

// A deliberately plain second implementation of the tie rule: per timestamp, growth first.
int64_t naivePeak(std::vector<TraceEvent> ev) {
  std::stable_sort(ev.begin(), ev.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.kind == EventKind::alloc && b.kind != EventKind::alloc;
  });
  std::map<uint64_t, int64_t> live;
  int64_t level = 0, peak = 0;
  for (const auto& e : ev) {
    if (e.kind == EventKind::alloc) {
      live[e.address] = e.bytes;
      level += e.bytes;
      peak = std::max(peak, level);
    } else {
      level -= live[e.address];
      live.erase(e.address);
    }
  }
  return peak;
}

}  // namespace

TEST(MemoryTimeline, AMillionEventsInOneSort) {
  // 500,000 blocks with random lifetimes, two events per clock tick (ties everywhere), shuffled.
  std::mt19937_64 rng(42);
  const int blocks = 500'000;
  std::vector<TraceEvent> ev;
  ev.reserve(2 * blocks);
  for (int i = 0; i < blocks; ++i) {
    const int64_t t = i / 2;
    const int64_t life = static_cast<int64_t>(rng() % 5000) + (i % 3 == 0 ? 0 : 1);
    const auto bytes = static_cast<int64_t>(rng() % (1 << 20));
    const uint64_t address = 0x10000000ull + static_cast<uint64_t>(i) * 64;
    ev.push_back(alloc(t, address, bytes));
    ev.push_back(release(t + life, address));
  }
  std::shuffle(ev.begin(), ev.end(), rng);
  const int64_t want = naivePeak(ev);
  const auto t0 = std::chrono::steady_clock::now();
  MemoryTimeline tl(ev, kAllocatorDevice);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("seconds", std::to_string(seconds));
  std::printf("MemoryTimeline over %zu events: %.3f s\n", ev.size(), seconds);
  EXPECT_EQ(tl.eventCount(), 2 * blocks);
  EXPECT_EQ(tl.peakBytes(), want);
  EXPECT_EQ(tl.finalBytes(), 0);
  EXPECT_EQ(tl.unknownFrees(), 0);
  EXPECT_EQ(tl.doubleAllocs(), 0);
  int64_t curve_max = 0;
  for (const auto& p : tl.curve()) curve_max = std::max(curve_max, p.bytes);
  EXPECT_EQ(curve_max, want);
  EXPECT_TRUE(std::is_sorted(tl.curve().begin(), tl.curve().end(),
                             [](const MemoryPoint& a, const MemoryPoint& b) { return a.t_ns < b.t_ns; }));

  // Downsampled for a chart, the true peak survives.
  auto small = downsampleCurve(tl.curve(), 500);
  EXPECT_LE(small.size(), 1002u);
  int64_t small_max = 0;
  for (const auto& p : small) small_max = std::max(small_max, p.bytes);
  EXPECT_EQ(small_max, want);
}

TEST(Downsample, KeepsEachBucketsMaximumAndMinimum) {
  std::vector<MemoryPoint> curve;
  for (int64_t i = 0; i < 100'000; ++i) curve.push_back({i * 10, 1000 + (i % 7)});
  curve[54'321].bytes = 1'000'000;  // a one-point spike
  curve[77'777].bytes = 3;          // and a one-point trough
  auto out = downsampleCurve(curve, 100);
  EXPECT_LE(out.size(), 202u);
  EXPECT_GE(out.size(), 100u);
  EXPECT_EQ(out.front(), curve.front());
  EXPECT_EQ(out.back(), curve.back());
  EXPECT_NE(std::find(out.begin(), out.end(), curve[54'321]), out.end());
  EXPECT_NE(std::find(out.begin(), out.end(), curve[77'777]), out.end());
  for (size_t i = 1; i < out.size(); ++i) EXPECT_LT(out[i - 1].t_ns, out[i].t_ns);
  for (const auto& p : out) EXPECT_NE(std::find(curve.begin(), curve.end(), p), curve.end());
}

TEST(Downsample, SmallCurvesAreUnchanged) {
  std::vector<MemoryPoint> curve = {{0, 1}, {1, 5}, {2, 3}};
  EXPECT_EQ(downsampleCurve(curve, 2), curve);
  EXPECT_EQ(downsampleCurve(curve, 0), curve);
  EXPECT_TRUE(downsampleCurve({}, 10).empty());
}
