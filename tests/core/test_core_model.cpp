// Allocator, plan, reference, sweep expansion and the run engine's status handling. The engine
// is driven through a small backend defined here that computes with the float64 reference, so
// its statuses can be provoked precisely.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/check/reference.h"
#include "reference_test_backend.h"
#include "core/engine/run_engine.h"
#include "core/engine/sweep_runner.h"

using namespace attnscope;

TEST(TrackingAllocator, TracksLivePeakAndEvents) {
  HostAllocator a;
  {
    Buffer<float> x(a, 100, "x");
    Buffer<float> y(a, 50, "y");
    EXPECT_EQ(a.liveBytes(), 600);
    y.reset();
    Buffer<uint8_t> z(a, 10, "z");
    EXPECT_EQ(a.liveBytes(), 410);
  }
  EXPECT_EQ(a.liveBytes(), 0);
  EXPECT_EQ(a.peakBytes(), 600);
  auto ev = a.takeEvents();
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[0].kind, EventKind::alloc);
  EXPECT_EQ(ev[0].name, "x");
  EXPECT_EQ(ev[0].bytes, 400);
  EXPECT_EQ(ev[2].kind, EventKind::free);
  EXPECT_EQ(ev[2].name, "y");
  for (size_t i = 1; i < ev.size(); ++i) EXPECT_GE(ev[i].start_ns, ev[i - 1].start_ns);
  EXPECT_TRUE(a.takeEvents().empty());
}

TEST(TrackingAllocator, LimitRaisesOutOfMemoryWithNumbers) {
  HostAllocator a(1000);
  Buffer<uint8_t> x(a, 600, "x");
  try {
    Buffer<uint8_t> y(a, 500, "y");
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(e.requested(), 500);
    EXPECT_EQ(e.freeBytes(), 400);
    EXPECT_NE(std::string(e.what()).find("500 B"), std::string::npos);
  }
  EXPECT_EQ(a.liveBytes(), 600);
}

// Large blocks come back from the cache on a request of the same rounded size, while live,
// peak and the events stay the requests'; small blocks are never kept.
TEST(HostAllocatorCache, ReusesAFreedLargeBlockOfTheSameSize) {
  HostAllocator a;
  constexpr int64_t kMiB = 1 << 20;
  void* first = nullptr;
  {
    Buffer<uint8_t> x(a, kMiB, "x");
    first = x.data();
  }
  EXPECT_EQ(a.cachedBytes(), kMiB);
  {
    Buffer<uint8_t> y(a, kMiB - 10, "y");  // rounds to the same 64-byte multiple
    EXPECT_EQ(y.data(), first);
    EXPECT_EQ(a.cacheHits(), 1);
    EXPECT_EQ(a.cachedBytes(), 0);
    EXPECT_EQ(a.liveBytes(), kMiB - 10);
    Buffer<uint8_t> z(a, kMiB + 64, "z");  // another size: a new block
    EXPECT_NE(z.data(), first);
    EXPECT_EQ(a.cacheHits(), 1);
  }
  EXPECT_EQ(a.peakBytes(), 2 * kMiB + 54);
  const auto ev = a.takeEvents();
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[2].name, "y");
  EXPECT_EQ(ev[2].bytes, kMiB - 10);
  {
    Buffer<uint8_t> small(a, HostAllocator::kCachedBytes / 2, "small");
  }
  EXPECT_EQ(a.cachedBytes(), 2 * kMiB + 64);  // the two large blocks, not the small one
}

// What the allocator holds, live + cached, never passes twice its peak (the bound when the
// machine has far more memory free than the peak, as here), and a miss that would pass it
// evicts the largest cached blocks first.
TEST(HostAllocatorCache, HoldsAtMostTwiceThePeakAndEvictsLargestFirst) {
  HostAllocator a;
  constexpr int64_t kMiB = 1 << 20;
  auto holds = [&] { return a.liveBytes() + a.cachedBytes(); };
  auto round = [&](int64_t bytes, int count) {
    std::vector<Buffer<uint8_t>> live;
    for (int i = 0; i < count; ++i) {
      live.emplace_back(a, bytes, "b");
      EXPECT_LE(holds(), 2 * a.peakBytes()) << bytes << " #" << i;
    }
  };
  round(kMiB, 4);  // peak 4 MiB; then all four cached
  EXPECT_EQ(a.cachedBytes(), 4 * kMiB);
  round(3 * kMiB / 2, 4);  // misses: peak 6 MiB, 10 MiB cached after
  EXPECT_EQ(a.peakBytes(), 6 * kMiB);
  EXPECT_EQ(a.cachedBytes(), 10 * kMiB);
  // 1.25 MiB blocks miss too; the second must evict: 1.25 live + 10 cached + 1.25 > 12.
  std::vector<Buffer<uint8_t>> live;
  live.emplace_back(a, 5 * kMiB / 4, "c");
  EXPECT_EQ(a.cachedBytes(), 10 * kMiB);
  live.emplace_back(a, 5 * kMiB / 4, "c");
  EXPECT_EQ(a.cachedBytes(), 10 * kMiB - 3 * kMiB / 2);  // one 1.5 MiB block went
  EXPECT_LE(holds(), 2 * a.peakBytes());
  live.clear();
  round(kMiB, 4);  // the 1 MiB blocks were kept: every request hits
  EXPECT_EQ(a.cacheHits(), 4);
  EXPECT_LE(holds(), 2 * a.peakBytes());
}

TEST(MemoryPlan, PeakIsTheLargestLiveSum) {
  MemoryPlan p;
  int in = p.addStep("inputs"), sc = p.addStep("scores"), sm = p.addStep("softmax"), out = p.addStep("output");
  p.add("q", 100, in, out, BufferRole::input);
  p.add("S", 1000, sc, sm, BufferRole::workspace);
  p.add("P", 1000, sm, out, BufferRole::workspace);
  p.add("o", 100, out, out, BufferRole::output);
  EXPECT_EQ(p.peakBytes(), 2100);
  EXPECT_EQ(p.peakStep(), sm);
  EXPECT_EQ(p.ioBytes(), 200);
  MemoryPlan back = memoryPlanFromJson(nlohmann::json::parse(toJson(p).dump()));
  EXPECT_EQ(back.peakBytes(), 2100);
  EXPECT_EQ(back.buffers.size(), 4u);
  EXPECT_EQ(back.buffers[3].role, BufferRole::output);
  EXPECT_EQ(p.lifetime(p.buffers[1]), "scores..softmax");
  EXPECT_EQ(p.lifetime(p.buffers[3]), "output");
  EXPECT_EQ(p.problem(), "");
}

TEST(MemoryPlan, ProblemNamesWhatADamagedPlanGetsWrong) {
  // Plans read from a file: steps past the plan's, reversed, negative sizes, sums that overflow.
  auto plan = [](int first, int last, int64_t bytes, int64_t second = 0) {
    MemoryPlan p;
    p.addStep("inputs");
    p.addStep("scores");
    p.add("q", bytes, first, last, BufferRole::input);
    if (second) p.add("k", second, 0, 1, BufferRole::input);
    return p;
  };
  EXPECT_EQ(plan(0, 1, 8).problem(), "");
  EXPECT_EQ(plan(0, 2, 8).problem(), "buffer 'q' lives in steps 0..2 of 2");
  EXPECT_EQ(plan(-1, 0, 8).problem(), "buffer 'q' lives in steps -1..0 of 2");
  EXPECT_EQ(plan(1, 0, 8).problem(), "buffer 'q' lives in steps 1..0 of 2");
  EXPECT_EQ(plan(0, 1, -8).problem(), "buffer 'q' has -8 bytes");
  EXPECT_EQ(plan(0, 1, int64_t{1} << 62, int64_t{1} << 62).problem(), "buffer 'k' has 4611686018427387904 bytes");
  EXPECT_EQ(plan(0, 7, 8).stepName(7), "step 7");
  EXPECT_EQ(plan(0, 7, 8).lifetime(plan(0, 7, 8).buffers[0]), "inputs..step 7");
}

TEST(Reference, SingleVisibleKeyReturnsItsValue) {
  WorkloadSpec s;
  s.batch = 1;
  s.heads = 1;
  s.seq_q = 4;
  s.head_dim = 3;
  s.mask = {MaskKind::causal, 0, 1.0};
  HostInputs in = HostInputs::generate(s);
  std::vector<double> out;
  referenceRows(s, in, {0}, out);
  for (int d = 0; d < 3; ++d) EXPECT_DOUBLE_EQ(out[d], in.v.at(d));
  // Lq > Lkv with causal: query 0 sees nothing -> zeros.
  s.seq_kv = 2;
  in = HostInputs::generate(s);
  referenceRows(s, in, {0, 3}, out);
  for (int d = 0; d < 3; ++d) EXPECT_EQ(out[d], 0.0);
  EXPECT_NE(out[3 + 0], 0.0);
}

TEST(Reference, SampledRowsAreSeededDistinctAndIncludeEnds) {
  WorkloadSpec s;
  s.heads = 16;
  s.seq_q = 4096;
  auto rows = accuracyRows(s, HostInputs{}, CheckDepth::sampled);
  EXPECT_EQ(rows.size(), 256u + 16u * 64u);  // seeded, and a row of every query block of every head
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 16 * 4096 - 1);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(rows, accuracyRows(s, HostInputs{}, CheckDepth::sampled));
  s.seq_q = 100;
  EXPECT_EQ(accuracyRows(s, HostInputs{}, CheckDepth::sampled).size(), 1600u);
}

// Forward vs train vs checkpoint in one sweep: the forward points with a checkpoint mean nothing
// and are left out (and not counted), only when pass is swept over train.
TEST(SweepSpec, PassOverTrainLeavesOutForwardCheckpoints) {
  SweepSpec sw;
  sw.axes = {{"heads", {"1", "2"}}, {"pass", {"forward", "train"}}, {"checkpoint", {"none", "attention"}}};
  sw.backends = {"a", "b"};
  std::vector<SpecError> errs;
  auto pts = sw.expand(&errs);
  EXPECT_TRUE(errs.empty()) << describe(errs);
  ASSERT_EQ(pts.size(), 6u);
  EXPECT_EQ(sw.pointCount(), 12u);
  for (const auto& p : pts) EXPECT_FALSE(p.pass == Pass::forward && p.checkpoint == Checkpoint::attention) << summary(p);
  EXPECT_EQ(pts[0].pass, Pass::forward);
  EXPECT_EQ(pts[1].pass, Pass::train);
  EXPECT_EQ(pts[2].checkpoint, Checkpoint::attention);
  // Checkpoint held in the base, pass swept: the forward point goes, the train one stays.
  sw.axes = {{"pass", {"forward", "train"}}};
  sw.base.checkpoint = Checkpoint::attention;
  errs.clear();
  pts = sw.expand(&errs);
  EXPECT_TRUE(errs.empty()) << describe(errs);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].pass, Pass::train);
  EXPECT_EQ(sw.pointCount(), 2u);
  // Pass not swept over train: the point asked for is an error, not silently dropped.
  sw.axes = {{"checkpoint", {"none", "attention"}}};
  sw.base.checkpoint = Checkpoint::none;
  errs.clear();
  pts = sw.expand(&errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "checkpoint");
  EXPECT_EQ(sw.pointCount(), 4u);
}

TEST(SweepSpec, ExpandsTheGridAndReportsBadPoints) {
  SweepSpec sw;
  sw.base.width = 64;
  sw.axes = {{"heads", {"8", "16"}}, {"seq", {"128", "256", "512"}}};
  sw.backends = {"a", "b"};
  std::vector<SpecError> errs;
  auto pts = sw.expand(&errs);
  EXPECT_TRUE(errs.empty()) << describe(errs);
  ASSERT_EQ(pts.size(), 6u);
  EXPECT_EQ(sw.pointCount(), 12u);
  EXPECT_EQ(pts[3].heads, 16);
  EXPECT_EQ(pts[3].headDim(), 4);
  EXPECT_EQ(pts[3].seq_q, 128);
  sw.axes = {{"heads", {"8", "128"}}};
  errs.clear();
  sw.expand(&errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "width");
  sw.axes = {{"dtype", {"fp32", "int8"}}};
  errs.clear();
  sw.expand(&errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "dtype");
  SweepSpec back = sweepSpecFromJson(nlohmann::json::parse(toJson(sw).dump()));
  EXPECT_EQ(back.axes.size(), 1u);
  EXPECT_EQ(back.base, sw.base);
}

TEST(SweepSpec, StoredCountsMustBeIntegersInRange) {
  // Found by fuzz_spec: a stored memory_budget of 1.5e37 was converted to int64 (undefined
  // behaviour). Floats, strings and out-of-range numbers are refused, naming the key.
  SweepSpec sw;
  sw.backends = {"cpu.flash"};
  sw.memory_budget = int64_t{1} << 40;
  sw.reps = 7;
  nlohmann::json j = toJson(sw);
  EXPECT_EQ(sweepSpecFromJson(j).memory_budget, int64_t{1} << 40);
  EXPECT_EQ(sweepSpecFromJson(j).reps, 7);
  auto refused = [&](const char* key, nlohmann::json value, const std::string& phrase) {
    nlohmann::json bad = j;
    bad[key] = value;
    try {
      (void)sweepSpecFromJson(bad);
      ADD_FAILURE() << key << " = " << value.dump() << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
    }
  };
  refused("memory_budget", 1.5e37, "'memory_budget' must be an integer");
  refused("memory_budget", uint64_t{1} << 63, "not 9223372036854775808");
  refused("reps", int64_t{1} << 40, "'reps' must be an integer from -2147483648 to 2147483647");
  refused("warmup", 2.0, "'warmup'");
  refused("warmup", "1", "'warmup'");
  j.erase("warmup");
  EXPECT_EQ(sweepSpecFromJson(j).warmup, 1);
}

namespace {

using attnscope::testing::ReferenceTestBackend;

WorkloadSpec small() {
  WorkloadSpec s;
  s.heads = 2;
  s.seq_q = 16;
  s.head_dim = 8;
  return s;
}

}  // namespace

TEST(RunEngine, OkRunHasTimingMemoryAccuracyAndTrace) {
  ReferenceTestBackend b;
  RunOptions o;
  o.warmup = 1;
  o.reps = 3;
  RunResult r = runPoint(b, small(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.timing.samples_s.size(), 3u);
  EXPECT_DOUBLE_EQ(r.timing.median_s, 1e-3);
  EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak);
  EXPECT_TRUE(r.accuracy.passed());
  EXPECT_EQ(r.accuracy.rows_checked, 32);
  EXPECT_GT(r.flops, 0);
  int phases = 0;
  for (const auto& e : r.trace.events) phases += e.kind == EventKind::phase;
  EXPECT_EQ(phases, 4);
}

// warmup_seconds adds warm-up passes until they have taken that long (this backend reports 1 ms a
// pass): 1 + 10 more for 10.5 ms; the timed reps are unchanged and the count is reported.
TEST(RunEngine, WarmupSecondsAddsWarmupPasses) {
  ReferenceTestBackend b;
  RunOptions o;
  o.warmup = 1;
  o.reps = 3;
  o.warmup_seconds = 0.0105;
  RunResult r = runPoint(b, small(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.timing.warmup, 11);
  EXPECT_EQ(r.timing.samples_s.size(), 3u);
  o.warmup_seconds = 0;
  EXPECT_EQ(runPoint(b, small(), o).timing.warmup, 1);
}

TEST(RunEngine, StatusesForInvalidUnsupportedBudgetAndMemory) {
  ReferenceTestBackend b;
  RunOptions o;
  WorkloadSpec bad = small();
  bad.heads = 0;
  EXPECT_EQ(runPoint(b, bad, o).status, RunStatus::error);
  WorkloadSpec bf = small();
  bf.dtype = DType::bf16;
  RunResult u = runPoint(b, bf, o);
  EXPECT_EQ(u.status, RunStatus::unsupported);
  EXPECT_NE(u.message.find("bf16"), std::string::npos);
  o.memory_budget = 100;
  RunResult sk = runPoint(b, small(), o);
  EXPECT_EQ(sk.status, RunStatus::skipped);
  EXPECT_EQ(sk.memory.predicted_peak, small().ioBytes());
  o.memory_budget = -1;
  b.available = 1000;
  RunResult oom = runPoint(b, small(), o);
  EXPECT_EQ(oom.status, RunStatus::oom);
  EXPECT_NE(oom.message.find("available"), std::string::npos);
}

TEST(RunEngine, CancelStopsARunInFlight) {
  ReferenceTestBackend b;
  b.slow = true;
  std::atomic<bool> cancel{false};
  RunOptions o;
  o.cancel = &cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel = true;
  });
  auto t0 = std::chrono::steady_clock::now();
  RunResult r = runPoint(b, small(), o);
  t.join();
  EXPECT_EQ(r.status, RunStatus::cancelled);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  EXPECT_EQ(r.memory.measured_peak, small().ioBytes());
}

TEST(SweepRunner, EtaWeighsPointsByTheirWork) {
  // After a small point, the ETA for a large one is the elapsed time scaled by their work, not
  // by their count (seq 1024 is ~60x the work of seq 16 here).
  BackendRegistry reg;
  reg.add(std::make_unique<ReferenceTestBackend>());
  SweepSpec sw;
  sw.base = small();
  sw.axes = {{"seq", {"16", "1024"}}};
  sw.backends = {"test.reference"};
  sw.reps = 1;
  sw.warmup = 0;
  std::vector<SweepProgress> progress;
  SweepRunner runner(reg);
  runner.run(sw, {[&](const SweepProgress& p) { progress.push_back(p); }, {}});
  const std::vector<WorkloadSpec> points = sw.expand();
  ASSERT_EQ(points.size(), 2u);
  const double w_small = pointFlops(points[0]) + 1e6, w_large = pointFlops(points[1]) + 1e6;
  ASSERT_GT(w_large, 10 * w_small);
  const SweepProgress* after_first = nullptr;
  for (const auto& p : progress)
    if (p.done == 1 && !after_first) after_first = &p;
  ASSERT_NE(after_first, nullptr);
  ASSERT_GT(after_first->elapsed_s, 0);
  EXPECT_NEAR(after_first->eta_s / after_first->elapsed_s, w_large / w_small, 1e-6 * w_large / w_small);
  EXPECT_EQ(progress.front().eta_s, -1);  // nothing done, nothing to go by
}

TEST(SweepRunner, RunsEveryPointIsolatesFailuresAndReportsProgress) {
  BackendRegistry reg;
  reg.add(std::make_unique<ReferenceTestBackend>());
  SweepSpec sw;
  sw.base = small();
  sw.axes = {{"dtype", {"fp32", "bf16", "fp16"}}};
  sw.backends = {"test.reference"};
  sw.reps = 1;
  std::vector<SweepProgress> progress;
  int stored = 0;
  SweepRunner runner(reg);
  auto results = runner.run(sw, {[&](const SweepProgress& p) { progress.push_back(p); },
                                 [&](RunResult& r) { r.id = ++stored; }});
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].status, RunStatus::ok);
  EXPECT_EQ(results[1].status, RunStatus::unsupported);
  EXPECT_EQ(results[2].status, RunStatus::ok);
  EXPECT_EQ(results[2].id, 3);
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().done, 3u);
  EXPECT_EQ(progress.back().total, 3u);
  sw.backends = {"nope"};
  EXPECT_THROW(runner.run(sw, {}), std::invalid_argument);
}
