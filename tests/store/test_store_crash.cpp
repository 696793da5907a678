// A writer killed with SIGKILL in the middle of saving runs loses at most the run in flight:
// every run a reader saw committed is complete afterwards and the file passes integrity_check.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "core/store/store.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

int64_t eventsFor(int64_t index) { return 200 + index % 150; }

// The child: saves runs 0, 1, 2, ... into a new sweep until it is killed, announcing on `pipe_fd`
// the index of each run before it starts saving it.
[[noreturn]] void writeForever(const std::string& path, const std::string& sweep_name, int pipe_fd) {
  try {
    Store store(path);
    int64_t sweep = store.createSweep(test::sampleSweep(sweep_name), 0);
    for (int64_t i = 0;; ++i) {
      RunResult run = test::sampleRun(i, eventsFor(i));
      if (write(pipe_fd, &i, sizeof i) != sizeof i) break;
      store.saveRun(sweep, run);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "writer failed: %s\n", e.what());
  }
  _exit(3);
}

// Runs committed in sweeps named `sweep_name`, as seen by an independent read-only connection.
int64_t committedRuns(const std::string& path, const std::string& sweep_name) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return 0;
  }
  sqlite3_busy_timeout(db, 1000);
  sqlite3_stmt* s = nullptr;
  int64_t n = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT count(*) FROM runs JOIN sweeps ON sweeps.id = runs.sweep_id WHERE sweeps.name = ?",
                         -1, &s, nullptr) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, sweep_name.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
  }
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

std::string integrityCheck(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string result;
  EXPECT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr), SQLITE_OK);
  while (sqlite3_step(s) == SQLITE_ROW) result += reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return result;
}

TEST(StoreCrash, SigkillMidSweepKeepsEveryCommittedRun) {
  test::TempDir dir;
  std::string path = dir.file("runs.sqlite");
  // Three writers in turn on the same file, each killed at a different point.
  const int64_t kill_after[] = {5, 23, 41};
  for (int round = 0; round < 3; ++round) {
    std::string name = "crash " + std::to_string(round);
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(fds[0]);
      writeForever(path, name, fds[1]);
    }
    close(fds[1]);

    int64_t seen = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while ((seen = committedRuns(path, name)) < kill_after[round] && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      ASSERT_EQ(waitpid(child, &status, WNOHANG), 0) << "the writer exited early";
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_GE(seen, kill_after[round]) << "the writer made no progress";
    // Skip the announcements already buffered, wait for a fresh one, then kill while that run is
    // being written.
    int64_t announced = -1;
    ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    while (read(fds[0], &announced, sizeof announced) == static_cast<ssize_t>(sizeof announced)) {
    }
    ASSERT_EQ(fcntl(fds[0], F_SETFL, 0), 0);
    ASSERT_EQ(read(fds[0], &announced, sizeof announced), static_cast<ssize_t>(sizeof announced));
    if (round > 0) std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the writer was not killed mid-write";
    // The last run the writer started; it was in flight or had just committed.
    ASSERT_EQ(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
    for (int64_t next = 0; read(fds[0], &next, sizeof next) == static_cast<ssize_t>(sizeof next);) announced = next;
    close(fds[0]);

    EXPECT_EQ(integrityCheck(path), "ok");
    Store store(path, StoreMode::existing);
    std::optional<SweepInfo> sweep;
    for (const auto& s : store.sweeps())
      if (s.name == name) sweep = s;
    ASSERT_TRUE(sweep);
    auto runs = store.runs(sweep->id);
    ASSERT_GE(static_cast<int64_t>(runs.size()), seen);
    // Every run before the one in flight is there; the one in flight is all there or absent.
    EXPECT_TRUE(static_cast<int64_t>(runs.size()) == announced || static_cast<int64_t>(runs.size()) == announced + 1)
        << runs.size() << " runs stored, run " << announced << " was in flight";
    std::printf("round %d: killed while saving run %lld; %zu runs stored\n", round, static_cast<long long>(announced),
                runs.size());
    for (size_t i = 0; i < runs.size(); ++i) {
      SCOPED_TRACE("round " + std::to_string(round) + " run " + std::to_string(i));
      RunResult expected = test::sampleRun(static_cast<int64_t>(i), eventsFor(static_cast<int64_t>(i)));
      auto full = store.run(runs[i].id);
      ASSERT_TRUE(full);
      ASSERT_EQ(full->message, expected.message);  // runs are committed in order, none missing
      ASSERT_EQ(full->trace.events.size(), expected.trace.events.size());
      test::expectSameEvent(full->trace.events.front(), expected.trace.events.front());
      test::expectSameEvent(full->trace.events.back(), expected.trace.events.back());
    }
  }
  EXPECT_EQ(integrityCheck(path), "ok");
}

}  // namespace
}  // namespace attnscope
