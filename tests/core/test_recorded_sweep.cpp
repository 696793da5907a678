// The one path from a sweep to the store (core/engine/recorded_sweep.h) that every front end uses:
// finished, cancelled between points and within one, failed part-way because the disk filled,
// and the name rules every front end shares.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "core/engine/recorded_sweep.h"
#include "core/store/store.h"
#include "reference_test_backend.h"
#include "tests/support/temp_dir.h"

namespace attnscope {
namespace {

using testing::ReferenceTestBackend;

struct Bench {
  test::TempDir dir;
  std::string db = dir.file("runs.sqlite");
  BackendRegistry registry;
  ReferenceTestBackend* backend = nullptr;
  Bench() {
    auto b = std::make_unique<ReferenceTestBackend>();
    backend = b.get();
    registry.add(std::move(b));
  }
  // heads x seq: 2 x 2 points on the test backend.
  SweepSpec spec(const std::string& name = "") const {
    SweepSpec s;
    s.name = name;
    s.base = testing::smallTestSpec();
    s.axes = {{"heads", {"1", "2"}}, {"seq", {"8", "16"}}};
    s.backends = {backend->id()};
    s.warmup = 0;
    s.reps = 1;
    return s;
  }
};

TEST(RecordedSweep, FinishedSweepStoresEveryPointAndItsState) {
  Bench b;
  Store store(b.db);
  SweepRunner runner(b.registry);
  int64_t started = 0;
  std::vector<int64_t> saved;
  RecordedSweepCallbacks cb;
  cb.started = [&](int64_t id, const SweepSpec&) { started = id; };
  cb.saved = [&](const RunResult& r) {
    EXPECT_GT(r.id, 0);
    EXPECT_FALSE(r.trace.events.empty()) << "the saved callback sees the trace";
    saved.push_back(r.id);
  };
  RecordedSweep recorded(store, b.spec("grid"));
  const RecordedSweepResult& result = recorded.run(runner, cb);
  EXPECT_EQ(result.state, "finished");
  EXPECT_EQ(result.planned, 4u);
  ASSERT_EQ(result.runs.size(), 4u);
  EXPECT_TRUE(result.runs[0].trace.events.empty()) << "the kept results hold no trace";
  EXPECT_EQ(started, result.sweep_id);
  EXPECT_EQ(saved.size(), 4u);
  auto info = store.sweep(result.sweep_id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->state, "finished");
  EXPECT_EQ(info->name, "grid");
  EXPECT_EQ(info->run_count, 4);
  EXPECT_EQ(info->ok_count, 4);
}

TEST(RecordedSweep, AnUnnamedSweepIsNamedAfterItsStartAndAnEmptyNameIsNotStored) {
  Bench b;
  Store store(b.db);
  SweepRunner runner(b.registry);
  RecordedSweep recorded(store, b.spec(""));
  const std::string name = recorded.run(runner, {}).name;
  EXPECT_EQ(name.rfind("sweep 20", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("sweep 2026-12-01 19:48:19").size()) << name;
  EXPECT_EQ(store.sweep(recorded.id())->name, name);
}

TEST(RecordedSweep, CancelBetweenPointsAndWithinOne) {
  Bench b;
  Store store(b.db);
  SweepRunner runner(b.registry);
  {
    // Between points: the token is set once the first point is saved; no point is in flight.
    std::atomic<bool> cancel{false};
    RecordedSweepCallbacks cb;
    cb.saved = [&](const RunResult&) { cancel = true; };
    RecordedSweep recorded(store, b.spec("between"));
    const RecordedSweepResult& result = recorded.run(runner, cb, &cancel);
    EXPECT_EQ(result.state, "cancelled");
    EXPECT_EQ(result.runs.size(), 1u);
    EXPECT_EQ(result.count({RunStatus::cancelled}), 0u) << "no point was in flight";
    EXPECT_EQ(store.sweep(result.sweep_id)->state, "cancelled");
  }
  {
    // Within a point: a slow backend, cancelled while it runs; that point is saved as cancelled.
    b.backend->slow = true;
    std::atomic<bool> cancel{false};
    RecordedSweep recorded(store, b.spec("within"));
    std::thread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      cancel = true;
    });
    const RecordedSweepResult& result = recorded.run(runner, {}, &cancel);
    stopper.join();
    EXPECT_EQ(result.state, "cancelled");
    ASSERT_EQ(result.runs.size(), 1u);
    EXPECT_EQ(result.runs[0].status, RunStatus::cancelled);
    EXPECT_EQ(store.runs(result.sweep_id).size(), 1u);
  }
}

// The disk fills after two points (RLIMIT_FSIZE at the -wal's size in a child: the next write
// that grows a file fails with EFBIG): the sweep ends failed, saying how many points are saved,
// and those two are in the file.
TEST(RecordedSweep, FullDiskPartWayEndsFailedAndKeepsWhatWasSaved) {
  Bench b;
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int code = 0;
    try {
      ::signal(SIGXFSZ, SIG_IGN);
      Store store(b.db);
      SweepRunner runner(b.registry);
      RecordedSweepCallbacks cb;
      int saved = 0;
      cb.saved = [&](const RunResult&) {
        if (++saved != 2) return;
        struct stat st {};
        ::stat((b.db + "-wal").c_str(), &st);
        rlimit lim{static_cast<rlim_t>(st.st_size), RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &lim);
      };
      RecordedSweep recorded(store, b.spec("full"));
      const RecordedSweepResult& result = recorded.run(runner, cb);
      if (result.state != "failed") code = 10;
      else if (result.error.find("2 of 4 points are saved in sweep S") == std::string::npos) code = 11;
      else if (result.runs.size() != 2) code = 12;
      if (code) std::fprintf(stderr, "child: state %s, error '%s'\n", result.state.c_str(), result.error.c_str());
      rlimit none{RLIM_INFINITY, RLIM_INFINITY};
      setrlimit(RLIMIT_FSIZE, &none);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      code = 13;
    }
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  Store store(b.db, StoreMode::read);
  auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  // The final state could not be written either (the limit was still on): the writer is gone,
  // so the sweep reads as failed or, when its last write did not make it, interrupted.
  EXPECT_TRUE(sweeps[0].state == "failed" || sweeps[0].state == "interrupted") << sweeps[0].state;
  EXPECT_EQ(store.runs(sweeps[0].id).size(), 2u);
  EXPECT_TRUE(store.check().empty());
}

TEST(RecordedSweep, InvalidSpecsAndNamesAreRefusedBeforeAnythingIsStored) {
  Bench b;
  Store store(b.db);
  SweepSpec bad = b.spec("bad");
  bad.axes = {{"heads", {"1", "0"}}};
  EXPECT_THROW(RecordedSweep(store, bad), std::invalid_argument);
  EXPECT_THROW(RecordedSweep(store, b.spec(std::string(kMaxSweepNameBytes + 1, 'n'))), std::invalid_argument);
  EXPECT_THROW(RecordedSweep(store, b.spec("bad\xff name")), std::invalid_argument);
  EXPECT_TRUE(store.sweeps().empty());
  EXPECT_NO_THROW(RecordedSweep(store, b.spec(std::string(kMaxSweepNameBytes, 'n'))).finish(false));
  EXPECT_NO_THROW(RecordedSweep(store, b.spec("Ünïcödé sweep")).finish(false));
}

TEST(AxisList, OneGrammarForEveryFrontEnd) {
  std::string problem;
  EXPECT_EQ(splitAxisList("1,2,4", &problem), (std::vector<std::string>{"1", "2", "4"}));
  EXPECT_EQ(splitAxisList(" 1, 2 ,4 ", &problem), (std::vector<std::string>{"1", "2", "4"}));
  for (const char* bad : {"", "1,,2", "1,", ",1", "1, ,2"}) {
    problem.clear();
    EXPECT_TRUE(splitAxisList(bad, &problem).empty()) << bad;
    EXPECT_NE(problem.find("empty item"), std::string::npos) << bad << ": " << problem;
  }
  EXPECT_TRUE(splitAxisList("8,16,8", &problem).empty());
  EXPECT_NE(problem.find("'8' is given twice"), std::string::npos) << problem;

  std::vector<SpecError> errors;
  auto axes = parseAxisAssignments("dtype=fp32, fp16; mask=none,causal;", &errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(axes.size(), 2u);
  EXPECT_EQ(axes[0].field, "dtype");
  EXPECT_EQ(axes[0].values, (std::vector<std::string>{"fp32", "fp16"}));
  EXPECT_EQ(axes[1].values, (std::vector<std::string>{"none", "causal"}));
  parseAxisAssignments("dtype; mask=none,none; =fp32", &errors);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[1].field, "mask");
  EXPECT_NE(errors[1].message.find("given twice"), std::string::npos);
}

}  // namespace
}  // namespace attnscope
