// Reading never writes: no side files, no schema, nothing on a read-only file or folder (as the
// unprivileged user nobody when the tests run as root, so that permissions really apply); writing
// checks up front that it can write.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/store/store.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::readBytes;
using test::TempDir;

void makeDatabase(const std::string& path, int sweeps = 2) {
  Store store(path);
  for (int s = 0; s < sweeps; ++s) {
    int64_t id = store.createSweep(test::sampleSweep("sweep " + std::to_string(s)), 0);
    store.saveRun(id, test::sampleRun(s, 300));
    store.setSweepState(id, "finished");
  }
}

void expectNoSideFiles(const std::string& path) {
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    EXPECT_FALSE(std::filesystem::exists(path + suffix)) << path << suffix << " was left behind";
}

// Whether permission bits bind this process or, as root, a child dropped to nobody.
bool asRoot() { return geteuid() == 0; }

// Opens a TempDir to nobody (mkdtemp makes it 0700).
void openToEveryone(const TempDir& dir) { ::chmod(dir.path().c_str(), 0777); }

TEST(StoreReadOnly, ReadingLeavesTheFileAndFolderAsTheyWere) {
  TempDir dir;
  const std::string path = dir.file("runs.sqlite");
  makeDatabase(path);
  expectNoSideFiles(path);
  const std::string before = readBytes(path);
  const auto mtime = std::filesystem::last_write_time(path);
  {
    Store store(path, StoreMode::read);
    EXPECT_TRUE(store.readOnly());
    ASSERT_EQ(store.sweeps().size(), 2u);
    EXPECT_EQ(store.runs(store.sweeps()[0].id).size(), 1u);
    EXPECT_TRUE(store.check().empty());
    EXPECT_THROW(store.renameSweep(1, "x"), StoreError);
  }
  EXPECT_TRUE(readBytes(path) == before);
  EXPECT_EQ(std::filesystem::last_write_time(path), mtime);
  expectNoSideFiles(path);
}

// The file is chmod 444 in a writable folder; the reader is not its owner-with-privileges.
TEST(StoreReadOnly, ReadOnlyFileIsReadWithoutSideFilesAndRefusedForWriting) {
  TempDir dir;
  openToEveryone(dir);
  const std::string path = dir.file("runs.sqlite");
  makeDatabase(path);
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  const std::string before = readBytes(path);
  int code = test::inChild(
      [&] {
        {
          Store store(path, StoreMode::read);
          if (store.sweeps().size() != 2) return 10;
          if (store.runs(1).size() != 1) return 11;
        }
        try {
          Store writer(path);
          return 12;  // opened for writing
        } catch (const StoreError& e) {
          if (e.kind() != StoreError::Kind::read_only) return 13;
          if (std::string(e.what()).find("read-only") == std::string::npos) return 14;
        }
        return 0;
      },
      asRoot());
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(readBytes(path) == before);
  expectNoSideFiles(path);
  // The owner makes it writable again: writes work, nothing stale is in the way.
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Store store(path);
  store.saveRun(1, test::sampleRun(9, 10));
  EXPECT_EQ(store.runs(1).size(), 2u);
}

TEST(StoreReadOnly, DatabaseInAReadOnlyFolderIsReadable) {
  TempDir dir;
  const std::string folder = dir.file("ro");
  std::filesystem::create_directory(folder);
  const std::string path = folder + "/runs.sqlite";
  makeDatabase(path);
  openToEveryone(dir);
  ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
  const std::string before = readBytes(path);
  int code = test::inChild(
      [&] {
        Store store(path, StoreMode::read);
        if (store.sweeps().size() != 2) return 10;
        if (!store.run(1, true) || store.run(1, true)->trace.events.size() != 300) return 11;
        if (!store.check().empty()) return 12;
        try {
          Store writer(path);
          return 13;
        } catch (const StoreError& e) {
          if (e.kind() != StoreError::Kind::read_only) return 14;
        }
        return 0;
      },
      asRoot());
  ::chmod(folder.c_str(), 0755);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(readBytes(path) == before);
  expectNoSideFiles(path);
}

TEST(StoreReadOnly, ASnapshotReadNoticesTheFileChanging) {
  // Without write access SQLite can read a WAL file only as immutable; a change made meanwhile
  // must fail the read, never give a torn result. Here the reader owns the file and chmods it,
  // the first step any writer of a read-only file must take.
  TempDir dir;
  openToEveryone(dir);
  const std::string path = dir.file("runs.sqlite");
  makeDatabase(path);
  if (asRoot()) {
    ASSERT_EQ(::chown(path.c_str(), test::kNobody, test::kNobody), 0);
  }
  ASSERT_EQ(::chmod(path.c_str(), 0444), 0);
  int code = test::inChild(
      [&] {
        Store store(path, StoreMode::read);
        if (store.sweeps().size() != 2) return 10;
        if (::chmod(path.c_str(), 0644) != 0) return 11;
        try {
          store.sweeps();
          return 12;
        } catch (const StoreError& e) {
          if (std::string(e.what()).find("changed while it was being read") == std::string::npos) return 13;
        }
        return 0;
      },
      asRoot());
  EXPECT_EQ(code, 0);
}

TEST(StoreReadOnly, ReadingAnEmptyFileWritesNothing) {
  TempDir dir;
  const std::string zero = dir.file("zero.sqlite");
  test::writeBytes(zero, "");
  const std::string empty_db = dir.file("empty.sqlite");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(empty_db.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); DROP TABLE t;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  for (const std::string& path : {zero, empty_db}) {
    SCOPED_TRACE(path);
    const std::string before = readBytes(path);
    {
      Store store(path, StoreMode::read);
      EXPECT_TRUE(store.sweeps().empty());
      EXPECT_FALSE(store.sweep(1).has_value());
      EXPECT_FALSE(store.run(1).has_value());
      // A 0-byte file holds no database (check says so); an SQLite file without tables is an
      // empty one.
      EXPECT_EQ(store.check().size(), path == zero ? 1u : 0u);
    }
    EXPECT_TRUE(readBytes(path) == before) << "a read wrote into the file";
    expectNoSideFiles(path);
  }
  EXPECT_THROW(Store(dir.file("missing.sqlite"), StoreMode::read), StoreError);
  EXPECT_FALSE(std::filesystem::exists(dir.file("missing.sqlite")));
}

TEST(StoreReadOnly, WritingToAReadOnlyFolderIsRefusedBeforeAnythingIsCreated) {
  TempDir dir;
  openToEveryone(dir);
  const std::string folder = dir.file("ro");
  std::filesystem::create_directory(folder);
  ::chmod(folder.c_str(), 0555);
  int code = test::inChild(
      [&] {
        try {
          Store store(folder + "/new.sqlite");
          return 10;
        } catch (const StoreError& e) {
          return e.kind() == StoreError::Kind::read_only ? 0 : 11;
        }
      },
      asRoot());
  ::chmod(folder.c_str(), 0755);
  EXPECT_EQ(code, 0);
  EXPECT_TRUE(std::filesystem::is_empty(folder));
}

}  // namespace
}  // namespace attnscope
