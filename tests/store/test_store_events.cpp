// A run with 1,000,000 trace events survives the round trip exactly. Timings are printed, never
// asserted (bench/bench_store measures throughput).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "core/store/store.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

TEST(StoreEvents, OneMillionEventsRoundTrip) {
  constexpr int64_t kEvents = 1'000'000;
  test::TempDir dir;
  std::string path = dir.file("runs.sqlite");
  RunResult run = test::sampleRun(3, kEvents);
  int64_t bytes_sum = 0;
  for (const auto& e : run.trace.events) bytes_sum += e.bytes;

  using clock = std::chrono::steady_clock;
  int64_t run_id = 0;
  {
    Store store(path);
    int64_t sweep = store.createSweep(test::sampleSweep("a million"), 0);
    store.saveRun(sweep, test::sampleRun(0, 10));  // a neighbour whose events must not leak in
    auto t0 = clock::now();
    run_id = store.saveRun(sweep, run);
    std::printf("saved %lld events in %.3f s\n", static_cast<long long>(kEvents),
                std::chrono::duration<double>(clock::now() - t0).count());
    store.saveRun(sweep, test::sampleRun(1, 10));
  }
  Store store(path, StoreMode::existing);
  auto t0 = clock::now();
  std::vector<TraceEvent> back = store.events(run_id);
  std::printf("read %zu events in %.3f s\n", back.size(), std::chrono::duration<double>(clock::now() - t0).count());

  ASSERT_EQ(back.size(), static_cast<size_t>(kEvents));
  test::expectSameEvent(run.trace.events.front(), back.front());
  test::expectSameEvent(run.trace.events.back(), back.back());
  int64_t back_sum = 0;
  size_t mismatches = 0;
  for (size_t i = 0; i < back.size(); ++i) {
    back_sum += back[i].bytes;
    const TraceEvent& a = run.trace.events[i];
    const TraceEvent& b = back[i];
    if (a.start_ns != b.start_ns || a.end_ns != b.end_ns || a.name != b.name || a.kind != b.kind ||
        a.address != b.address || a.correlation != b.correlation || a.stream != b.stream ||
        a.kernel.grid[0] != b.kernel.grid[0] || a.kernel.dynamic_smem != b.kernel.dynamic_smem)
      ++mismatches;
  }
  EXPECT_EQ(back_sum, bytes_sum);
  EXPECT_EQ(mismatches, 0u);

  auto full = store.run(run_id);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->trace.events.size(), static_cast<size_t>(kEvents));

  // Deleting the sweep removes the million events with it.
  store.deleteSweep(*store.sweepOfRun(run_id));
  EXPECT_TRUE(store.events(run_id).empty());
}

}  // namespace
}  // namespace attnscope
