// One database shared the way the GUI and the CLI share it: a long-lived connection (the
// window), a second Store in the same process (the sweep worker, an export), and other processes
// reading and writing (`attnscope runs`, a CLI sweep) while the first connection stays open.
// Reading the header through a second descriptor used to drop the process's POSIX locks, so the
// other process deleted the live -wal and -shm, and writes made afterwards were lost.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/store.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::TempDir;

// The "other process": this binary run again with one of these variables set.
int otherProcessMain() {
  try {
    if (const char* db = std::getenv("ATTNSCOPE_STORE_TEST_READ")) {
      Store store(db, StoreMode::read);
      auto sweeps = store.sweeps();
      for (const auto& s : sweeps) store.runs(s.id);
      return sweeps.empty() ? 3 : 0;
    }
    if (const char* db = std::getenv("ATTNSCOPE_STORE_TEST_WRITE")) {
      Store store(db);
      int64_t sweep = store.createSweep(test::sampleSweep("from another process"), 0);
      store.saveRun(sweep, test::sampleRun(100, 300));
      store.setSweepState(sweep, "finished");
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "other process: %s\n", e.what());
    return 4;
  }
  return -1;
}

const bool kIsOtherProcess = [] {
  if (std::getenv("ATTNSCOPE_STORE_TEST_READ") || std::getenv("ATTNSCOPE_STORE_TEST_WRITE")) std::_Exit(otherProcessMain());
  return false;
}();

ino_t inodeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::string rawQuery(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK) {
    while (sqlite3_step(st) == SQLITE_ROW) {
      if (!out.empty()) out += "|";
      const unsigned char* t = sqlite3_column_text(st, 0);
      out += t ? reinterpret_cast<const char*>(t) : "NULL";
    }
  } else {
    out = std::string("error: ") + sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

TEST(StoreSharing, SecondStoreInProcessAndOtherProcessesLoseNothing) {
  ASSERT_FALSE(kIsOtherProcess);
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  int64_t env = 0, first = 0, second = 0;
  {
    Store window(path);  // the GUI's connection, open throughout
    env = window.saveEnvironment(Environment{});
    first = window.createSweep(test::sampleSweep("first"), env);
    window.saveRun(first, test::sampleRun(1, 400));
    window.saveRun(first, test::sampleRun(2, 400));
    const ino_t wal = inodeOf(path + "-wal");
    ASSERT_NE(wal, 0u) << "the open connection has a -wal file";

    {
      Store worker(path);  // the sweep worker's own connection in the same process
      second = worker.createSweep(test::sampleSweep("second"), env);
      worker.saveRun(second, test::sampleRun(3, 400));
    }
    {
      Store exporter(path, StoreMode::read);  // an export or report in the same process
      EXPECT_EQ(exporter.sweeps().size(), 2u);
    }
    // `attnscope runs` and a CLI sweep in other processes, while the window stays open.
    EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_READ=" + path}), 0);
    EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_WRITE=" + path}), 0);
    EXPECT_EQ(inodeOf(path + "-wal"), wal) << "another process replaced the -wal the window is using";

    // The window goes on: Ctrl+R again, a rename.
    int64_t third = window.createSweep(test::sampleSweep("third"), env);
    window.saveRun(third, test::sampleRun(4, 400));
    window.saveRun(third, test::sampleRun(5, 400));
    window.renameSweep(first, "renamed after the others");
    window.setSweepState(third, "finished");
    EXPECT_EQ(window.sweeps().size(), 4u);
  }
  // Everything is in the file, and the file is sound.
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawQuery(path, "SELECT name FROM sweeps ORDER BY id"),
            "renamed after the others|second|from another process|third");
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM runs"), "6");
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM events"), std::to_string(5 * 400 + 300));
  Store again(path, StoreMode::read);
  EXPECT_TRUE(again.check().empty());
  auto runs = again.runs(first);
  ASSERT_EQ(runs.size(), 2u);
  test::expectSameRun(*again.run(runs[1].id), test::sampleRun(2, 400), true);
}

TEST(StoreSharing, ReaderInTheSameProcessDoesNotDisturbAWriterThread) {
  // The GUI thread reads (its tree, the charts) while the worker thread writes, each with its
  // own Store: WAL readers never block the writer, and every point arrives.
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  Store gui(path);
  int64_t sweep = gui.createSweep(test::sampleSweep("threads"), 0);
  std::thread worker([&] {
    Store store(path);
    for (int i = 0; i < 20; ++i) store.saveRun(sweep, test::sampleRun(i, 50));
  });
  size_t seen = 0;
  while (seen < 20) {
    Store reader(path, StoreMode::read);
    seen = reader.runs(sweep).size();
    EXPECT_LE(seen, 20u);
    seen = std::max(seen, gui.runs(sweep).size());
  }
  worker.join();
  EXPECT_EQ(gui.runs(sweep).size(), 20u);
  EXPECT_TRUE(gui.check().empty());
}

}  // namespace
}  // namespace attnscope
