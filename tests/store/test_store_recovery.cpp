// What a store makes of what others left: sweeps whose process is gone, rows damaged by hand or
// by a bug, and the full check that opening no longer runs.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/store/store.h"
#include "core/store/store_owner.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::TempDir;

void execRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string storedState(const std::string& path, int64_t sweep) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string state;
  sqlite3_prepare_v2(db, "SELECT state FROM sweeps WHERE id = ?", -1, &s, nullptr);
  sqlite3_bind_int64(s, 1, sweep);
  if (sqlite3_step(s) == SQLITE_ROW) state = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return state;
}

TEST(StoreOwner, ThisProcessIsAliveAndADeadOneIsGone) {
  const ProcessIdentity self = thisProcess();
  EXPECT_EQ(ownerState(self), OwnerState::alive);
  ProcessIdentity reused = self;
  reused.start_ticks += 1;  // same pid, another start: a reused pid
  EXPECT_EQ(ownerState(reused), OwnerState::gone);
  ProcessIdentity rebooted = self;
  rebooted.boot_id = "another boot";
  EXPECT_EQ(ownerState(rebooted), OwnerState::gone);
  ProcessIdentity elsewhere = self;
  elsewhere.host += "-elsewhere";
  EXPECT_EQ(ownerState(elsewhere), OwnerState::unknown);
}

TEST(StoreOwner, SweepOfAProcessThatDiedIsInterruptedNotRunning) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  { Store create(path); }
  // A sweep process that saves two points and dies without a word (SIGKILL, an abort, OOM).
  int code = test::inChild([&] {
    Store store(path);
    int64_t sweep = store.createSweep(test::sampleSweep("killed"), 0);
    store.saveRun(sweep, test::sampleRun(0, 50));
    store.saveRun(sweep, test::sampleRun(1, 50));
    raise(SIGKILL);
    return 1;
  });
  EXPECT_EQ(code, 128 + SIGKILL);
  // The killed one reads as interrupted, without the reader writing anything.
  {
    Store reader(path, StoreMode::read);
    EXPECT_EQ(reader.sweep(1)->state, "interrupted");
    EXPECT_EQ(reader.sweep(1)->run_count, 2);
  }
  EXPECT_EQ(storedState(path, 1), "running");
  // A writer's open marks it in the file; a live sweep of this process stays running.
  Store mine(path);
  EXPECT_EQ(storedState(path, 1), "interrupted");
  int64_t live = mine.createSweep(test::sampleSweep("live"), 0);
  EXPECT_EQ(mine.sweep(live)->state, "running");
  { Store other(path); }
  { Store reader(path, StoreMode::read); EXPECT_EQ(reader.sweep(live)->state, "running"); }
  EXPECT_EQ(storedState(path, live), "running");
  EXPECT_EQ(mine.sweeps()[0].state, "interrupted");
}

TEST(StoreOwner, KilledButNotYetReapedIsGone) {
  // After SIGKILL a process stays a zombie, with its /proc entry and start time, until its parent
  // waits for it (a shell that is busy, a GUI that launched it): its sweep is already over.
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  { Store create(path); }
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    Store store(path);
    store.createSweep(test::sampleSweep("zombie"), 0);
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) _exit(2);
    raise(SIGKILL);
    _exit(1);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);  // dead, not reaped
  {
    Store reader(path, StoreMode::read);
    EXPECT_EQ(reader.sweep(1)->state, "interrupted");
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(StoreRows, OneDamagedRowLeavesTheOthersReadable) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  {
    Store store(path);
    for (int s = 0; s < 4; ++s) {
      int64_t id = store.createSweep(test::sampleSweep("s" + std::to_string(s)), 0);
      store.saveRun(id, test::sampleRun(s, 5));
      store.saveRun(id, test::sampleRun(s + 10, 5));
    }
  }
  execRaw(path, "UPDATE sweeps SET spec = '{\"backends\": [' WHERE id = 2;"
                "UPDATE sweeps SET spec = json_remove(spec, '$.base') WHERE id = 3;"
                "UPDATE runs SET samples = 'not json' WHERE id = 8;");
  Store store(path, StoreMode::read);
  auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 4u);
  EXPECT_TRUE(sweeps[0].error.empty());
  EXPECT_TRUE(sweeps[3].error.empty());
  for (int i : {1, 2}) {
    const std::string& e = sweeps[i].error;
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.find("[json.exception"), std::string::npos) << e;
    EXPECT_NE(e.find("sweep S" + std::to_string(i + 1)), std::string::npos) << e;
    EXPECT_EQ(sweeps[i].name, "s" + std::to_string(i));
  }
  EXPECT_NE(sweeps[2].error.find("'base'"), std::string::npos) << sweeps[2].error;
  auto runs = store.runs(4);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, RunStatus::oom);
  EXPECT_EQ(runs[1].status, RunStatus::error);
  EXPECT_NE(runs[1].message.find("cannot be read"), std::string::npos) << runs[1].message;
  EXPECT_LT(runs[1].memory.measured_peak, 0) << "an unreadable row shows no figures";
}

// A database in dir holding sweep S1 with `runs` sample runs of `events` events each.
std::string oneSweepOfRuns(TempDir& dir, int runs, int64_t events) {
  const std::string path = dir.file("runs.sqlite");
  Store store(path);
  int64_t id = store.createSweep(test::sampleSweep("s"), 0);
  for (int i = 0; i < runs; ++i) store.saveRun(id, test::sampleRun(i, events));
  return path;
}

TEST(StoreRows, DamagedEventCountIsOnlyAHint) {
  // Found by fuzz_store: a run row whose event_count is negative or absurd made reading its
  // events throw std::length_error (an uncaught crash in show and the GUI). The events rows
  // decide what is read; the count only sizes a reservation.
  TempDir dir;
  const std::string path = oneSweepOfRuns(dir, 3, 7);
  size_t events = 0;
  {
    Store store(path, StoreMode::read);
    events = store.run(1, true)->trace.events.size();
    ASSERT_GT(events, 0u);
  }
  execRaw(path, "UPDATE runs SET event_count = -1 WHERE id = 1;"
                "UPDATE runs SET event_count = 9223372036854775807 WHERE id = 2;"
                "UPDATE runs SET event_count = 0 WHERE id = 3;");
  Store store(path, StoreMode::read);
  for (int64_t id : {1, 2, 3}) {
    auto run = store.run(id, true);
    ASSERT_TRUE(run.has_value()) << "run " << id;
    EXPECT_EQ(run->trace.events.size(), events) << "run " << id;
  }
}

TEST(StoreRows, DamagedPlanIsAnUnreadableRowNotACrash) {
  // A plan whose buffer lives past the plan's steps made `show R` index past the step names.
  TempDir dir;
  const std::string path = oneSweepOfRuns(dir, 2, 3);
  execRaw(path, "UPDATE runs SET plan = json_set(plan, '$.buffers[0].last_step', 99) WHERE id = 1;");
  Store store(path, StoreMode::read);
  auto runs = store.runs(1);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, RunStatus::error);
  EXPECT_NE(runs[0].message.find("plan: buffer"), std::string::npos) << runs[0].message;
  EXPECT_NE(runs[0].message.find("lives in steps 0..99"), std::string::npos) << runs[0].message;
  EXPECT_EQ(runs[1].status, RunStatus::oom) << runs[1].message;  // as saved
}

TEST(StoreCheck, SoundFileIsOkAndDamagedPagesAreFoundOnDemand) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  {
    Store store(path);
    int64_t id = store.createSweep(test::sampleSweep("big"), 0);
    for (int i = 0; i < 5; ++i) store.saveRun(id, test::sampleRun(i, 2000));
  }
  {
    Store store(path, StoreMode::read);
    EXPECT_TRUE(store.check().empty());
  }
  std::string bytes = test::readBytes(path);
  const size_t page = 4096;
  for (size_t p = bytes.size() / page / 2; p < bytes.size() / page / 2 + 3; ++p)
    for (size_t i = 0; i < page; ++i) bytes[p * page + i] = static_cast<char>(i * 7 + p);
  test::writeBytes(path, bytes);
  // Opening checks the header and schema only (cheap for any size); the damage is found on demand,
  // and reading a damaged page is an error, never a crash or made-up data.
  Store store(path, StoreMode::read);
  auto problems = store.check();
  EXPECT_FALSE(problems.empty());
  bool failed_to_read = false;
  try {
    for (const auto& r : store.runs(1)) store.events(r.id);
  } catch (const StoreError& e) {
    failed_to_read = e.kind() == StoreError::Kind::corrupt;
  }
  EXPECT_TRUE(failed_to_read || !problems.empty());
  EXPECT_TRUE(test::readBytes(path) == bytes) << "reading the damaged file changed it";
}

// `check` decodes every row through the readers' own code, so what show, export or the window
// would refuse (or show as made-up figures) check refuses too, each naming its row. Each damage
// below passed `check` as "ok" while `show` then called the file damaged or printed nonsense.
TEST(StoreCheck, RefusesEveryRowTheReadersRefuse) {
  struct Damage {
    const char* what;
    const char* sql;
    const char* found;  // a fragment of check's problem line
  };
  const Damage damages[] = {
      {"an event of unknown kind", "UPDATE events SET kind = 42 WHERE run_id = 1 AND seq = 0", "unknown kind"},
      {"an event of unknown memory", "UPDATE events SET memory = -3 WHERE run_id = 1 AND seq = 1", "unknown kind"},
      {"the strings table gone", "DELETE FROM strings", "names string"},
      {"a name id that does not exist", "UPDATE events SET name_id = 999999 WHERE run_id = 1 AND seq = 0",
       "names string 999999"},
      {"heads 0", "UPDATE runs SET heads = 0 WHERE id = 1", "impossible workload"},
      {"a state that does not exist", "UPDATE sweeps SET state = 'exploded' WHERE id = 1", "unknown state 'exploded'"},
      {"text in a number column", "UPDATE runs SET measured_peak = 'lots' WHERE id = 1",
       "'lots' in column measured_peak"},
      {"an environment that is not JSON", "INSERT INTO environments(host, os, cpu, gpu, app_version, git_revision, json)"
                                          " VALUES ('h', 'o', 'c', 'g', 'a', 'r', '{')",
       "environment"},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    TempDir dir;
    const std::string path = oneSweepOfRuns(dir, 2, 6);
    {
      Store store(path, StoreMode::read);
      ASSERT_TRUE(store.check().empty());
    }
    execRaw(path, d.sql);
    Store store(path, StoreMode::read);
    const auto problems = store.check();
    ASSERT_FALSE(problems.empty()) << "check says ok";
    bool named = false;
    for (const auto& p : problems) named |= p.find(d.found) != std::string::npos;
    EXPECT_TRUE(named) << problems.front();
  }
}

TEST(StoreCheck, AnEmptyFileIsNotASoundDatabase) {
  TempDir dir;
  const std::string path = dir.file("empty.sqlite");
  test::writeBytes(path, "");
  Store store(path, StoreMode::read);
  const auto problems = store.check();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("is empty (0 bytes)"), std::string::npos) << problems[0];
}

// A writer that died leaves its committed runs in the -wal. Reading (runs, show, check, export,
// report, the window's loaders) must not checkpoint them into the database file: the file keeps
// every byte, and the next writer finds every run.
TEST(StoreReading, ADeadWritersJournalIsReadButNotWrittenIntoTheFile) {
  TempDir dir;
  const std::string path = oneSweepOfRuns(dir, 1, 5);
  ASSERT_EQ(test::inChild([&] {
              Store store(path);
              int64_t id = store.createSweep(test::sampleSweep("died"), 0);
              store.saveRun(id, test::sampleRun(7, 5));
              std::fflush(nullptr);
              _exit(0);  // no close: the -wal keeps its frames
              return 0;
            }),
            0);
  ASSERT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  const std::string before = test::readBytes(path);
  for (int round = 0; round < 2; ++round) {
    Store reader(path, StoreMode::read);
    EXPECT_EQ(reader.sweeps().size(), 2u) << "the reader sees the dead writer's runs";
    EXPECT_TRUE(reader.check().empty());
  }
  EXPECT_TRUE(test::readBytes(path) == before) << "reading wrote the dead writer's journal into the file";
  EXPECT_GT(std::filesystem::file_size(path + "-wal"), 0u);
  {
    Store writer(path);  // the next writer applies the journal
    EXPECT_EQ(writer.sweeps().size(), 2u);
    EXPECT_EQ(writer.runs(2).size(), 1u);
  }
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
}

}  // namespace
}  // namespace attnscope
