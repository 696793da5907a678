// Output files: never the database (by any path), never any SQLite database, written whole or not
// at all, and a failure says why.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/files/output_file.h"
#include "core/store/store.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::readBytes;
using test::TempDir;

void expectRefusedOutput(const std::string& out, const std::string& db, const std::string& phrase) {
  try {
    checkOutput(out, db, OutputRule::text);
    ADD_FAILURE() << out << " was accepted as an output";
  } catch (const OutputRefused& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(OutputFile, TheDatabaseIsRefusedByAnyPath) {
  TempDir dir;
  const std::string db = dir.file("runs.sqlite");
  Store store(db);  // open, as during an export; its -wal and -shm exist
  std::filesystem::create_directory(dir.file("sub"));
  ASSERT_EQ(::link(db.c_str(), dir.file("hardlink.sqlite").c_str()), 0);
  std::filesystem::create_symlink(db, dir.file("symlink.csv"));
  for (const std::string& out : {db, dir.file("sub/../runs.sqlite"), dir.file("hardlink.sqlite"),
                                 dir.file("symlink.csv"), dir.file("./runs.sqlite")})
    expectRefusedOutput(out, db, "is the database");
  expectRefusedOutput(db + "-wal", db, "wal file");
  expectRefusedOutput(db + "-shm", db, "shm file");
}

TEST(OutputFile, AnyOtherDatabaseIsRefusedAndOrdinaryFilesAreNot) {
  TempDir dir;
  const std::string ours = dir.file("other.sqlite");
  { Store other(ours); }
  expectRefusedOutput(ours, dir.file("runs.sqlite"), "is an AttnScope database");
  const std::string theirs = dir.file("contacts.db");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(theirs.c_str(), &h), SQLITE_OK);
  sqlite3_exec(h, "CREATE TABLE c(x)", nullptr, nullptr, nullptr);
  sqlite3_close(h);
  expectRefusedOutput(theirs, "", "is an SQLite database");
  test::writeBytes(dir.file("old.csv"), "a,b\n");
  EXPECT_NO_THROW(checkOutput(dir.file("old.csv"), ours, OutputRule::text));
  EXPECT_NO_THROW(checkOutput(dir.file("new.csv"), ours, OutputRule::text));
}

TEST(OutputFile, WrittenWholeUnderATemporaryNameKeepingTheMode) {
  TempDir dir;
  const std::string out = dir.file("s1.csv");
  test::writeBytes(out, "old contents\n");
  ASSERT_EQ(::chmod(out.c_str(), 0640), 0);
  writeOutputFile(out, "new,contents\n1,2\n");
  EXPECT_EQ(readBytes(out), "new,contents\n1,2\n");
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1) << "a temporary file was left";
  {
    AtomicOutput pending(dir.file("chart.png"));
    EXPECT_TRUE(std::filesystem::exists(pending.tempPath()));
    EXPECT_EQ(std::filesystem::path(pending.tempPath()).parent_path(), dir.path());
  }  // not committed: removed, and chart.png never appeared
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(OutputFile, CannotWriteSaysWhy) {
  TempDir dir;
  try {
    writeOutputFile(dir.file("no/such/folder/s1.csv"), "x");
    ADD_FAILURE() << "wrote into a missing folder";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write " + dir.file("no/such/folder/s1.csv") + ": No such file or directory");
  }
  try {
    writeOutputFile(dir.path().string(), "x");
    ADD_FAILURE() << "wrote over a folder";
  } catch (const OutputRefused& e) {
    EXPECT_NE(std::string(e.what()).find("is a folder"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace attnscope
