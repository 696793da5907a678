// Concurrency as the GUI and the CLI use it: a sweep worker thread saving runs while the UI
// thread reads the same store, several connections to one file, and cancellation arriving from
// another thread while the CPU thread pool computes. Under ThreadSanitizer (scripts/test.sh,
// ctest -L tsan) a data race or a lock-order inversion fails the test; without it these check
// that nothing is lost. Sizes are small: TSan slows code down 5-15 times.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/backend_registry.h"
#include "core/engine/run_engine.h"
#include "core/store/store.h"
#include "core/engine/sweep_runner.h"
#include "kernels/cpu/cpu_backends.h"
#include "tests/support/temp_dir.h"

namespace attnscope {
namespace {

using test::TempDir;

WorkloadSpec tiny(int64_t seq) {
  WorkloadSpec s;
  s.batch = 1;
  s.heads = 4;
  s.kv_heads = 2;
  s.seq_q = seq;
  s.head_dim = 16;
  s.mask.kind = MaskKind::causal;
  return s;
}

SweepSpec tinySweep(const std::string& name, int points) {
  SweepSpec sw;
  sw.name = name;
  sw.base = tiny(32);
  SweepAxis seq{"seq", {}};
  for (int i = 0; i < points; ++i) seq.values.push_back(std::to_string(16 + 8 * i));
  sw.axes = {seq};
  sw.backends = {"cpu.reference", "cpu.flash"};
  sw.warmup = 0;
  sw.reps = 1;
  return sw;
}

TEST(Concurrency, SweepWorkerSavesWhileAnotherThreadReads) {
  TempDir dir;
  BackendRegistry registry;
  registerCpuBackends(registry);
  Store store(dir.file("runs.sqlite"));
  const SweepSpec sw = tinySweep("worker", 4);
  const int64_t sweep = store.createSweep(sw, 0);
  std::atomic<bool> done{false};
  std::atomic<size_t> progressCalls{0};
  std::thread worker([&] {
    SweepRunner runner(registry);
    SweepCallbacks cb;
    cb.progress = [&](const SweepProgress&) { progressCalls.fetch_add(1); };
    cb.result = [&](RunResult& r) { r.id = store.saveRun(sweep, r); };
    runner.run(sw, cb);
    store.setSweepState(sweep, "finished");
    done = true;
  });
  // The UI thread: lists sweeps and reads every run it sees, as the Runs dock refreshes.
  size_t seen = 0;
  while (!done) {
    for (const RunResult& r : store.runs(sweep)) {
      auto back = store.run(r.id);
      ASSERT_TRUE(back.has_value());
      EXPECT_EQ(back->status, RunStatus::ok) << back->message;
    }
    seen = store.sweeps().size();
  }
  worker.join();
  EXPECT_EQ(seen, 1u);
  EXPECT_EQ(store.runs(sweep).size(), sw.pointCount());
  EXPECT_EQ(store.sweep(sweep)->state, "finished");
  EXPECT_GE(progressCalls.load(), sw.pointCount());
}

TEST(Concurrency, ConnectionsInSeveralThreadsLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  { Store create(path); }
  constexpr int kWriters = 3, kRuns = 8;
  std::vector<int64_t> sweeps(kWriters);
  std::vector<std::thread> threads;
  for (int t = 0; t < kWriters; ++t)
    threads.emplace_back([&, t] {
      Store store(path, StoreMode::existing);  // its own connection, as another window or process would have
      SweepSpec sw = tinySweep("writer " + std::to_string(t), 1);
      sweeps[t] = store.createSweep(sw, 0);
      RunResult r;
      r.spec = tiny(16 + t);
      r.backend = "cpu.flash";
      r.device = "host";
      for (int i = 0; i < kRuns; ++i) {
        r.message = "run " + std::to_string(i);
        store.saveRun(sweeps[t], r);
        (void)store.sweeps();
      }
    });
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    Store store(path, StoreMode::existing);
    while (!stop)
      for (const SweepInfo& s : store.sweeps()) (void)store.runs(s.id);
  });
  for (auto& th : threads) th.join();
  stop = true;
  reader.join();
  Store store(path, StoreMode::existing);
  for (int t = 0; t < kWriters; ++t) EXPECT_EQ(store.runs(sweeps[t]).size(), static_cast<size_t>(kRuns)) << t;
}

TEST(Concurrency, CancelFromAnotherThreadStopsASweep) {
  BackendRegistry registry;
  registerCpuBackends(registry);
  SweepSpec sw = tinySweep("cancelled", 1);
  sw.base = tiny(512);
  sw.base.mask.kind = MaskKind::none;
  sw.axes = {{"heads", {"4", "8", "16"}}};
  sw.reps = 4;
  std::atomic<bool> cancel{false}, firstDone{false};
  SweepCallbacks cb;
  cb.result = [&](RunResult&) { firstDone = true; };
  // Cancels as soon as the first point is done: the second is then starting or inside the thread
  // pool, and nothing after it may run, however slow the machine.
  std::thread canceller([&] {
    while (!firstDone) std::this_thread::yield();
    cancel = true;
  });
  const std::vector<RunResult> out = SweepRunner(registry).run(sw, cb, &cancel);
  firstDone = true;  // lets the canceller end even if no point finished
  canceller.join();
  ASSERT_FALSE(out.empty());
  EXPECT_LE(out.size(), 2u);
  EXPECT_EQ(out.front().status, RunStatus::ok) << out.front().message;
  for (const RunResult& r : out) EXPECT_TRUE(r.status == RunStatus::ok || r.status == RunStatus::cancelled) << r.message;
}

TEST(Concurrency, ThreadPoolRunsAgreeWithTheReference) {
  BackendRegistry registry;
  registerCpuBackends(registry);
  Backend* flash = registry.find("cpu.flash");
  ASSERT_NE(flash, nullptr);
  for (DType d : {DType::fp32, DType::bf16}) {
    WorkloadSpec s = tiny(96);
    s.dtype = d;
    s.batch = 2;
    RunOptions opt;
    opt.warmup = 1;
    opt.reps = 2;
    const RunResult r = runPoint(*flash, s, opt);
    ASSERT_EQ(r.status, RunStatus::ok) << r.message;
    EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error;
  }
}

}  // namespace
}  // namespace attnscope
