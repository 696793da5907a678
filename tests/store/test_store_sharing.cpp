// One database shared the way the GUI and the CLI share it: a long-lived connection (the
// window), a second Store in the same process (the sweep worker, an export), and other processes
// reading and writing (`attnscope runs`, a CLI sweep) while the first connection stays open.
// Reading the header through a second descriptor used to drop the process's POSIX locks, so the
// other process deleted the live -wal and -shm, and writes made afterwards were lost.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <cstdlib>
#include <thread>

#include "core/store/sqlite_file_guard.h"
#include "core/store/store.h"
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
    // Whether another process holds a lock on the file (what SQLite's own checks look at).
    if (const char* file = std::getenv("ATTNSCOPE_STORE_TEST_LOCKED")) {
      int fd = ::open(file, O_RDONLY);
      if (fd < 0) return 6;
      struct flock probe {};
      probe.l_type = F_WRLCK;
      probe.l_whence = SEEK_SET;
      int rc = ::fcntl(fd, F_GETLK, &probe);
      ::close(fd);
      return rc == 0 && probe.l_type != F_UNLCK ? 0 : 5;
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
  if (std::getenv("ATTNSCOPE_STORE_TEST_READ") || std::getenv("ATTNSCOPE_STORE_TEST_WRITE") ||
      std::getenv("ATTNSCOPE_STORE_TEST_LOCKED"))
    std::_Exit(otherProcessMain());
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

// Code in the GUI process that knows nothing of SQLite (a file dialog sniffing a file's type, a
// thumbnailer, drag and drop) opens and closes the database's files. With POSIX locks, each
// close dropped every lock the process held on that file; another process then took itself for
// the last user and deleted the live -wal and -shm. Every order of touching the three files, then
// another process reading (the last user checkpoints and deletes the WAL) and writing: the locks
// are still seen from outside, nothing is deleted and nothing is lost.
TEST(StoreLocks, ForeignDescriptorsOfTheFilesDoNotDropTheLocks) {
  ASSERT_FALSE(kIsOtherProcess);
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  std::vector<std::string> files = {path, path + "-wal", path + "-shm"};
  int64_t runs_saved = 0;
  {
    Store window(path);
    EXPECT_TRUE(sqliteUsesOfdLocks()) << "this kernel refuses OFD locks; the store falls back to POSIX locks";
    int64_t sweep = window.createSweep(test::sampleSweep("window"), 0);
    window.saveRun(sweep, test::sampleRun(1, 50));
    ++runs_saved;
    const ino_t wal = inodeOf(path + "-wal"), shm = inodeOf(path + "-shm");
    ASSERT_NE(wal, 0u);
    ASSERT_NE(shm, 0u);
    std::vector<int> order = {0, 1, 2};
    int round = 0;
    do {
      SCOPED_TRACE("round " + std::to_string(round) + ": files touched in order " + std::to_string(order[0]) +
                   std::to_string(order[1]) + std::to_string(order[2]));
      // Open all three in this order and close them in this order, then each one alone.
      std::vector<int> fds;
      for (int i : order) fds.push_back(::open(files[i].c_str(), O_RDONLY | O_CLOEXEC));
      for (int fd : fds) {
        ASSERT_GE(fd, 0);
        char buf[64];
        EXPECT_GE(::read(fd, buf, sizeof buf), 0);  // what a MIME sniffer does
        ::close(fd);
      }
      for (int i : order) ::close(::open(files[i].c_str(), O_RDWR | O_CLOEXEC));
      EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_LOCKED=" + path}), 0) << "the database lost its lock";
      EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_LOCKED=" + path + "-shm"}), 0) << "the -shm lost its lock";
      EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_READ=" + path}), 0);
      EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_WRITE=" + path}), 0);
      ++runs_saved;
      EXPECT_EQ(inodeOf(path + "-wal"), wal) << "another process deleted the -wal this process uses";
      EXPECT_EQ(inodeOf(path + "-shm"), shm) << "another process deleted the -shm this process uses";
      window.saveRun(sweep, test::sampleRun(10 + round, 50));
      ++runs_saved;
      ++round;
    } while (std::next_permutation(order.begin(), order.end()));
    EXPECT_EQ(round, 6);
  }
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM runs"), std::to_string(runs_saved));
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM sweeps WHERE name = 'from another process'"), "6");
}

// SQLite shares one process's locks between its connections and lets the last one to unlock be
// another than the one that locked: several Stores in one process, opened and closed in turn
// and writing from threads at once, beside writers in other processes. Every lock taken is
// released (other processes get in), none is lost (the last connection still holds the files).
TEST(StoreLocks, SeveralConnectionsInOneProcessKeepAndReleaseLocksTogether) {
  ASSERT_FALSE(kIsOtherProcess);
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  int64_t sweep = 0;
  {
    auto first = std::make_unique<Store>(path);
    sweep = first->createSweep(test::sampleSweep("threads"), 0);
    auto second = std::make_unique<Store>(path);  // shares the first one's locks on the inode
    second->saveRun(sweep, test::sampleRun(1, 20));
    first.reset();  // locked through the first, now held through the second only
    ::close(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    ::close(::open((path + "-shm").c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_LOCKED=" + path}), 0);
    const ino_t wal = inodeOf(path + "-wal");
    EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_READ=" + path}), 0);
    EXPECT_EQ(inodeOf(path + "-wal"), wal);

    std::vector<std::thread> writers;
    for (int t = 0; t < 3; ++t)
      writers.emplace_back([&, t] {
        Store mine(path);
        for (int i = 0; i < 10; ++i) mine.saveRun(sweep, test::sampleRun(100 * (t + 1) + i, 20));
      });
    std::vector<std::thread> others;
    for (int p = 0; p < 2; ++p)
      others.emplace_back([&] { EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_WRITE=" + path}), 0); });
    for (auto& w : writers) w.join();
    for (auto& o : others) o.join();
    second->saveRun(sweep, test::sampleRun(2, 20));
    EXPECT_TRUE(second->check().empty());
  }
  // All closed: no lock is left behind, and the last close checkpointed and removed the WAL.
  EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_LOCKED=" + path}), 5) << "a lock outlived every connection";
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM runs"), std::to_string(2 + 30 + 2));
}

// Deleting -wal and -shm under a writer (rm, a cleaner): the writer must stop instead of going on
// into files nobody else sees, and must not, when it closes, write its stale WAL over the
// database or delete the new -wal of the sweep another process ran meanwhile.
TEST(StoreLocks, DeletedWalStopsTheWriterAndKeepsTheNextSweep) {
  ASSERT_FALSE(kIsOtherProcess);
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  {
    Store first(path);
    int64_t sweep = first.createSweep(test::sampleSweep("first"), 0);
    first.saveRun(sweep, test::sampleRun(1, 20));
    ASSERT_EQ(::unlink((path + "-wal").c_str()), 0);
    ASSERT_EQ(::unlink((path + "-shm").c_str()), 0);
    try {
      first.saveRun(sweep, test::sampleRun(2, 20));
      ADD_FAILURE() << "a save into a deleted -wal succeeded";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.kind(), StoreError::Kind::replaced);
      EXPECT_NE(std::string(e.what()).find("runs.sqlite-wal was deleted"), std::string::npos) << e.what();
    }
    EXPECT_THROW(first.setSweepState(sweep, "finished"), StoreError);
    // A second sweep in another process makes new side files and saves its point.
    EXPECT_EQ(test::inNewProcess({"ATTNSCOPE_STORE_TEST_WRITE=" + path}), 0);
  }  // the first writer closes last
  EXPECT_EQ(rawQuery(path, "PRAGMA integrity_check"), "ok");
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM sweeps WHERE name = 'from another process'"), "1")
      << "the stale writer's close lost the second sweep";
  EXPECT_EQ(rawQuery(path, "SELECT count(*) FROM runs WHERE sweep_id = (SELECT id FROM sweeps WHERE name = 'from another process')"),
            "1");
}

}  // namespace
}  // namespace attnscope
