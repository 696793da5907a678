// Files that must be refused: each one keeps every byte, and no -wal or -shm file appears.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <random>

#include "core/store/store.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::readBytes;
using test::TempDir;
using test::writeBytes;

void execRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Opens `path`, expects a StoreError of `kind` whose message names the file and contains
// `phrase`, and checks that the file and its folder are exactly as before.
void expectRefused(const std::string& path, StoreError::Kind kind, const std::string& phrase) {
  ASSERT_FALSE(std::filesystem::exists(path + "-wal"));
  ASSERT_FALSE(std::filesystem::exists(path + "-shm"));
  std::string before = readBytes(path);
  auto mtime = std::filesystem::last_write_time(path);
  for (StoreMode mode : {StoreMode::create, StoreMode::existing, StoreMode::read}) {
    try {
      Store store(path, mode);
      ADD_FAILURE() << path << " was opened";
    } catch (const StoreError& e) {
      std::string message = e.what();
      EXPECT_EQ(e.kind(), kind) << message;
      EXPECT_NE(message.find(path), std::string::npos) << message;
      EXPECT_NE(message.find(phrase), std::string::npos) << message;
      EXPECT_NE(message.find("not modified"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
    }
  }
  EXPECT_TRUE(readBytes(path) == before) << "the refused file changed";
  EXPECT_EQ(std::filesystem::last_write_time(path), mtime);
  EXPECT_FALSE(std::filesystem::exists(path + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path + "-shm"));
  EXPECT_FALSE(std::filesystem::exists(path + "-journal"));
}

// A real AttnScope database with enough events to span many pages; closed cleanly.
void makeRealDatabase(const std::string& path) {
  Store store(path);
  int64_t sweep = store.createSweep(test::sampleSweep("real"), store.saveEnvironment(Environment{}));
  for (int i = 0; i < 5; ++i) store.saveRun(sweep, test::sampleRun(i, 2000));
}

TEST(StoreRefusal, TextFile) {
  TempDir dir;
  std::string path = dir.file("notes.txt");
  writeBytes(path, std::string("These are my notes, not a database.\n") + std::string(200, 'x'));
  expectRefused(path, StoreError::Kind::not_attnscope, "not an SQLite file");
}

TEST(StoreRefusal, ShortFile) {
  TempDir dir;
  std::string path = dir.file("short.sqlite");
  writeBytes(path, "SQLite format 3");
  expectRefused(path, StoreError::Kind::not_attnscope, "not an AttnScope database");
}

TEST(StoreRefusal, PngImage) {
  TempDir dir;
  std::string path = dir.file("chart.png");
  std::string png = "\x89PNG\r\n\x1a\n";
  static const char ihdr[] = "\0\0\0\x0d" "IHDR" "\0\0\x01\0\0\0\x01\0\x08\x06\0\0\0";
  png += std::string(ihdr, sizeof ihdr - 1);
  std::mt19937 rng(1);
  for (int i = 0; i < 4000; ++i) png += static_cast<char>(rng());
  writeBytes(path, png);
  expectRefused(path, StoreError::Kind::not_attnscope, "not an SQLite file");
}

TEST(StoreRefusal, AnotherApplicationsDatabase) {
  TempDir dir;
  std::string path = dir.file("contacts.sqlite");
  execRaw(path, "CREATE TABLE contacts(name TEXT, phone TEXT); INSERT INTO contacts VALUES ('Ada', '123');");
  expectRefused(path, StoreError::Kind::not_attnscope, "contacts");
}

TEST(StoreRefusal, AnotherApplicationsWalDatabase) {
  TempDir dir;
  std::string path = dir.file("photos.db");
  execRaw(path,
          "PRAGMA journal_mode = WAL; PRAGMA application_id = 1234; CREATE TABLE photos(id INTEGER PRIMARY KEY, "
          "blob BLOB); INSERT INTO photos(blob) VALUES (zeroblob(10000));");
  expectRefused(path, StoreError::Kind::not_attnscope, "photos");
}

TEST(StoreRefusal, NewerSchema) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  const std::string newer = std::to_string(Store::kSchemaVersion + 1);
  execRaw(path, "PRAGMA user_version = " + newer);
  expectRefused(path, StoreError::Kind::newer_schema,
                "newer AttnScope (schema " + newer + "; this build reads up to " + std::to_string(Store::kSchemaVersion) + ")");
}

TEST(StoreRefusal, NewerSchemaWithARollbackJournal) {
  // A newer build may use another journal mode. Opening such a file for writing would switch it
  // to WAL (rewriting its header) before anything else noticed: the refusal must come first.
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  const int newer = Store::kSchemaVersion + 1;
  execRaw(path, "PRAGMA journal_mode = DELETE; PRAGMA user_version = " + std::to_string(newer));
  ASSERT_EQ(readBytes(path)[18], 1) << "the fixture is in rollback-journal mode";
  expectRefused(path, StoreError::Kind::newer_schema, "newer AttnScope (schema " + std::to_string(newer) +
                                                         "; this build reads up to " + std::to_string(Store::kSchemaVersion) + ")");
}

TEST(StoreRefusal, OurIdWithVersionZeroAndTables) {
  // What an interrupted creation by an old build, or an edit by hand, leaves: one clear line,
  // not the CREATE TABLE statement that would fail.
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  execRaw(path, "PRAGMA application_id = 1098142563; CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT);"
                "CREATE TABLE sweeps(id INTEGER PRIMARY KEY);");
  expectRefused(path, StoreError::Kind::corrupt, "schema version 0 with tables strings, sweeps");
}

TEST(StoreRefusal, SchemaMissingATable) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  execRaw(path, "PRAGMA journal_mode = DELETE; DROP TABLE sweep_owners;");
  expectRefused(path, StoreError::Kind::corrupt, "no table 'sweep_owners'");
}

TEST(StoreRefusal, GarbageEverywhereButTheHeader) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  std::string bytes = readBytes(path);
  std::mt19937 rng(11);
  for (size_t i = 100; i < bytes.size(); ++i) bytes[i] = static_cast<char>(rng());
  writeBytes(path, bytes);
  expectRefused(path, StoreError::Kind::corrupt, "damaged");
}

TEST(StoreRefusal, TruncatedDatabase) {
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  std::string bytes = readBytes(path);
  writeBytes(path, bytes.substr(0, bytes.size() / 2));
  expectRefused(path, StoreError::Kind::corrupt, "damaged");
}

TEST(StoreRefusal, AFolder) {
  TempDir dir;
  try {
    Store store(dir.path().string());
    ADD_FAILURE() << "opened a folder";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), StoreError::Kind::invalid);
    EXPECT_NE(std::string(e.what()).find("folder"), std::string::npos) << e.what();
  }
}

TEST(StoreRefusal, AcceptedFileStillOpensAfterTheChecks) {
  // The control case: the same real database, untouched, opens and reads.
  TempDir dir;
  std::string path = dir.file("runs.sqlite");
  makeRealDatabase(path);
  Store store(path, StoreMode::existing);
  ASSERT_EQ(store.sweeps().size(), 1u);
  EXPECT_EQ(store.sweeps()[0].run_count, 5);
}

}  // namespace
}  // namespace attnscope
