// Round trips through a real SQLite file: runs, sweeps, environments, defaults.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <limits>
#include <thread>

#include "core/result/environment.h"
#include "core/store/store.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::sampleRun;
using test::sampleSweep;
using test::TempDir;

int64_t countRows(const std::string& path, const std::string& table) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string sql = "SELECT count(*) FROM " + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK);
  int64_t n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(db);
  return n;
}

TEST(Store, RunRoundTripKeepsEveryField) {
  TempDir dir;
  std::string path = dir.file("nested/folder/runs.sqlite");  // parent folders are created
  RunResult original = sampleRun(42, 300);
  int64_t sweep_id = 0, run_id = 0;
  {
    Store store(path);
    sweep_id = store.createSweep(sampleSweep("round trip"), 0);
    run_id = store.saveRun(sweep_id, original);
    EXPECT_GT(run_id, 0);
  }
  Store store(path, StoreMode::existing);  // a fresh connection: nothing comes from a cache
  auto back = store.run(run_id);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, run_id);
  test::expectSameRun(original, *back, true);

  auto without = store.run(run_id, false);
  ASSERT_TRUE(without.has_value());
  EXPECT_TRUE(without->trace.events.empty());
  test::expectSameRun(original, *without, false);

  auto listed = store.runs(sweep_id);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].id, run_id);
  EXPECT_TRUE(listed[0].trace.events.empty());
  test::expectSameRun(original, listed[0], false);

  EXPECT_EQ(store.events(run_id).size(), 300u);
  EXPECT_EQ(store.sweepOfRun(run_id), sweep_id);
  EXPECT_FALSE(store.sweepOfRun(run_id + 1).has_value());
  EXPECT_FALSE(store.run(run_id + 1).has_value());
}

TEST(Store, UnusualValuesRoundTrip) {
  TempDir dir;
  Store store(dir.file("runs.sqlite"));
  int64_t sweep_id = store.createSweep(sampleSweep("odd"), 0);
  RunResult r = sampleRun(1, 0);
  r.spec.scale.reset();
  r.spec.kv_heads = 0;  // "same as heads" must stay unresolved
  r.spec.seq_kv = 0;
  r.spec.width = 512;
  r.spec.mask = MaskSpec{MaskKind::window, 128, 1.0};
  r.spec.seed = 0;
  r.status = RunStatus::ok;
  r.message.clear();
  r.accuracy.max_abs_error = std::numeric_limits<double>::quiet_NaN();  // SQLite stores NaN as NULL
  r.accuracy.rel_l2_error = std::numeric_limits<double>::infinity();
  r.timing.samples_s = {std::numeric_limits<double>::quiet_NaN(), -0.0, 1e-300};
  r.memory.cupti_peak = std::numeric_limits<int64_t>::max();
  r.trace.capture_note = std::string("nul\0inside", 10);
  TraceEvent e;
  e.name = "";  // no name: stored as NULL
  e.address = std::numeric_limits<uint64_t>::max();
  e.start_ns = std::numeric_limits<int64_t>::min();
  r.trace.events = {e};
  int64_t id = store.saveRun(sweep_id, r);
  auto back = store.run(id);
  ASSERT_TRUE(back);
  test::expectSameRun(r, *back, true);
  EXPECT_EQ(back->spec.kv_heads, 0);
  EXPECT_FALSE(back->spec.scale.has_value());
}

TEST(Store, EveryStatusRoundTrips) {
  TempDir dir;
  Store store(dir.file("runs.sqlite"));
  int64_t sweep_id = store.createSweep(sampleSweep("statuses"), 0);
  for (auto st : {RunStatus::ok, RunStatus::unsupported, RunStatus::oom, RunStatus::error, RunStatus::cancelled,
                  RunStatus::skipped}) {
    RunResult r = sampleRun(0, 2);
    r.status = st;
    EXPECT_EQ(store.run(store.saveRun(sweep_id, r))->status, st);
  }
  auto info = store.sweep(sweep_id);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->run_count, 6);
  EXPECT_EQ(info->ok_count, 1);
}

TEST(Store, SweepsListRenameNotesTagsStateAndDeleteCascade) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  Store store(path);
  int64_t env_id = store.saveEnvironment(captureEnvironment());
  SweepSpec spec = sampleSweep("heads at width 64");
  int64_t a = store.createSweep(spec, env_id);
  int64_t b = store.createSweep(sampleSweep("second"), 0);
  int64_t run_a = store.saveRun(a, sampleRun(1, 50));
  store.saveRun(a, sampleRun(2, 50));
  int64_t run_b = store.saveRun(b, sampleRun(3, 50));

  auto list = store.sweeps();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].id, a);
  EXPECT_EQ(list[0].name, "heads at width 64");
  EXPECT_EQ(list[0].state, "running");
  EXPECT_EQ(list[0].environment_id, env_id);
  EXPECT_EQ(list[0].run_count, 2);
  EXPECT_EQ(list[0].ok_count, 0);
  EXPECT_EQ(list[0].spec, toJson(spec));
  EXPECT_GT(list[0].created_unix_ms, 1'600'000'000'000);
  EXPECT_EQ(list[1].environment_id, 0);

  store.renameSweep(a, "renamed");
  store.setSweepNotes(a, "bool mask at 10k: x14 memory");
  store.setSweepTags(a, {"cliff", "report \"q3\""});
  store.setSweepState(a, "finished");
  auto info = store.sweep(a);
  ASSERT_TRUE(info);
  EXPECT_EQ(info->name, "renamed");
  EXPECT_EQ(info->notes, "bool mask at 10k: x14 memory");
  EXPECT_EQ(info->tags, (std::vector<std::string>{"cliff", "report \"q3\""}));
  EXPECT_EQ(info->state, "finished");
  EXPECT_THROW(store.setSweepState(a, "exploded"), StoreError);
  EXPECT_FALSE(store.sweep(b + 100).has_value());

  for (auto call : {+[](Store& s, int64_t id) { s.renameSweep(id, "x"); },
                    +[](Store& s, int64_t id) { s.setSweepNotes(id, "x"); },
                    +[](Store& s, int64_t id) { s.setSweepTags(id, {}); },
                    +[](Store& s, int64_t id) { s.setSweepState(id, "finished"); },
                    +[](Store& s, int64_t id) { s.deleteSweep(id); }, +[](Store& s, int64_t id) { s.deleteRun(id); }}) {
    try {
      call(store, 9999);
      ADD_FAILURE() << "no error for a missing id";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.kind(), StoreError::Kind::not_found) << e.what();
    }
  }
  try {
    store.saveRun(9999, sampleRun(0, 1));
    ADD_FAILURE() << "saved into a missing sweep";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), StoreError::Kind::invalid);
  }
  EXPECT_THROW(store.createSweep(spec, 9999), StoreError);

  EXPECT_EQ(countRows(path, "events"), 150);
  store.deleteRun(run_b);
  EXPECT_FALSE(store.run(run_b).has_value());
  EXPECT_EQ(countRows(path, "events"), 100);
  store.deleteSweep(a);
  EXPECT_FALSE(store.sweep(a).has_value());
  EXPECT_FALSE(store.run(run_a).has_value());
  EXPECT_TRUE(store.runs(a).empty());
  EXPECT_EQ(countRows(path, "runs"), 0);
  EXPECT_EQ(countRows(path, "events"), 0);
  ASSERT_EQ(store.sweeps().size(), 1u);
  EXPECT_EQ(store.environment(env_id), captureEnvironment());  // environments stay
}

TEST(Store, FailedSaveRollsBackEverythingIncludingInternedNames) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  Store store(path);
  int64_t sweep_id = store.createSweep(sampleSweep("rollback"), 0);
  RunResult r = sampleRun(5, 12);
  r.trace.events[1].name = "a name first seen in the failing run";
  {
    // Make the 6th event insert fail after the new name has been interned.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "CREATE TRIGGER fail_sixth BEFORE INSERT ON events WHEN NEW.seq = 5"
                           " BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  EXPECT_THROW(store.saveRun(sweep_id, r), StoreError);
  EXPECT_EQ(store.sweep(sweep_id)->run_count, 0);
  EXPECT_EQ(countRows(path, "events"), 0);
  EXPECT_EQ(countRows(path, "strings"), 0);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DROP TRIGGER fail_sixth", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  // A stale cache entry from the rolled-back transaction would point at a missing string.
  RunResult other = sampleRun(6, 3);
  other.trace.events[0].name = "another name";
  store.saveRun(sweep_id, other);
  int64_t id = store.saveRun(sweep_id, r);
  Store fresh(path);
  auto back = fresh.run(id);
  ASSERT_TRUE(back);
  test::expectSameRun(r, *back, true);
}

TEST(Store, TwoConnectionsSeeEachOthersRuns) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  Store writer(path);
  Store reader(path);
  int64_t sweep_id = writer.createSweep(sampleSweep("shared"), 0);
  int64_t id = writer.saveRun(sweep_id, sampleRun(9, 40));
  auto back = reader.run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->trace.events.size(), 40u);
}

TEST(Store, PathsWithCharactersThatUrisReserve) {
  // The read-only inspection opens the file through a "file:" URI; the name must survive it.
  TempDir dir;
  std::string path = dir.file("we?ird #1 100% f\xc3\xa9lix/runs file.sqlite");
  int64_t id = 0;
  {
    Store store(path);
    id = store.saveRun(store.createSweep(sampleSweep("odd path"), 0), sampleRun(2, 5));
  }
  Store store(path, StoreMode::existing);  // an existing file: inspected before it is opened
  ASSERT_TRUE(store.run(id));
  EXPECT_EQ(store.run(id)->trace.events.size(), 5u);
}

TEST(Store, OneStoreSharedByThreads) {
  TempDir dir;
  Store store(dir.file("runs.sqlite"));
  int64_t sweep_id = store.createSweep(sampleSweep("threads"), 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        int64_t id = store.saveRun(sweep_id, sampleRun(t * 100 + i, 50));
        auto back = store.run(id);
        EXPECT_TRUE(back && back->message == "point " + std::to_string(t * 100 + i));
        store.sweeps();
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(store.sweep(sweep_id)->run_count, 40);
}

TEST(Store, FileSettings) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  { Store store(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto pragma = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK);
    std::string v = sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "";
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(pragma("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(pragma("PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  EXPECT_EQ(pragma("PRAGMA application_id"), std::to_string(0x41745363));
  EXPECT_EQ(pragma("PRAGMA integrity_check"), "ok");
  sqlite3_close(db);
}

TEST(Store, MissingFileWithoutCreateIsNotFound) {
  TempDir dir;
  std::string path = dir.file("absent.sqlite");
  try {
    Store store(path, StoreMode::existing);
    ADD_FAILURE() << "opened a missing file";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), StoreError::Kind::not_found);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Store, EmptyFileBecomesANewDatabase) {
  TempDir dir;
  std::string path = dir.file("empty.sqlite");
  test::writeBytes(path, "");
  Store store(path);
  EXPECT_TRUE(store.sweeps().empty());
  store.createSweep(sampleSweep("in an empty file"), 0);
  EXPECT_EQ(store.sweeps().size(), 1u);
}

TEST(Store, DefaultDatabasePath) {
  auto set = [](const char* name, const char* value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  };
  std::string saved_db = getenv("ATTNSCOPE_DB") ? getenv("ATTNSCOPE_DB") : "";
  std::string saved_xdg = getenv("XDG_DATA_HOME") ? getenv("XDG_DATA_HOME") : "";
  std::string saved_home = getenv("HOME") ? getenv("HOME") : "";
  set("ATTNSCOPE_DB", "/tmp/explicit.sqlite");
  set("XDG_DATA_HOME", "/xdg");
  EXPECT_EQ(defaultDatabasePath(), "/tmp/explicit.sqlite");
  set("ATTNSCOPE_DB", nullptr);
  EXPECT_EQ(defaultDatabasePath(), "/xdg/attnscope/runs.sqlite");
  set("XDG_DATA_HOME", nullptr);
  set("HOME", "/home/someone");
  EXPECT_EQ(defaultDatabasePath(), "/home/someone/.local/share/attnscope/runs.sqlite");
  set("XDG_DATA_HOME", "relative/ignored");  // the XDG spec says relative values are ignored
  EXPECT_EQ(defaultDatabasePath(), "/home/someone/.local/share/attnscope/runs.sqlite");
  // HOME unset (cron, systemd, env -i): the password database's home, never the current folder.
  set("XDG_DATA_HOME", nullptr);
  set("HOME", nullptr);
  const struct passwd* pw = getpwuid(geteuid());
  ASSERT_TRUE(pw && pw->pw_dir && pw->pw_dir[0] == '/');
  EXPECT_EQ(defaultDatabasePath(), std::string(pw->pw_dir) + "/.local/share/attnscope/runs.sqlite");
  EXPECT_NE(defaultDatabasePath().rfind(std::filesystem::current_path().string() + "/attnscope", 0), 0u);
  if (geteuid() == 0) {
    // A user the password database does not know, without HOME: refused, with what to do.
    EXPECT_EQ(test::inChild([] {
                if (setuid(54321) != 0) return 3;
                try {
                  defaultDatabasePath();
                  return 1;
                } catch (const StoreError& e) {
                  return std::string(e.what()).find("give --db FILE or set ATTNSCOPE_DB") != std::string::npos ? 0 : 2;
                }
              }),
              0);
  }
  set("ATTNSCOPE_DB", saved_db.empty() ? nullptr : saved_db.c_str());
  set("XDG_DATA_HOME", saved_xdg.empty() ? nullptr : saved_xdg.c_str());
  set("HOME", saved_home.empty() ? nullptr : saved_home.c_str());
}

}  // namespace
}  // namespace attnscope
