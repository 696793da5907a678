// The forward-migration framework, and the checked-in version-1 fixture that a future schema
// version must keep opening (by migrating it).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <set>
#include <stdexcept>

#include "core/base/uuid.h"
#include "core/store/sqlite_connection.h"
#include "core/store/store.h"
#include "core/store/store_schema.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using store_schema::Migration;

bool hasTable(SqliteConnection& db, const std::string& name) {
  SqliteStatement s = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
  s.bindText(1, name);
  return s.step();
}

std::unique_ptr<SqliteConnection> openRaw(const std::string& path) {
  return std::make_unique<SqliteConnection>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, path);
}

std::vector<Migration> fakeSteps() {
  return {
      {0, "create a", [](SqliteConnection& db) { db.exec("CREATE TABLE a(x INTEGER)"); }},
      {1, "create b and copy", [](SqliteConnection& db) {
         db.exec("CREATE TABLE b(y INTEGER); INSERT INTO b SELECT x FROM a");
       }},
  };
}

TEST(StoreMigration, StepsRunInOrderToTheTarget) {
  test::TempDir dir;
  auto db = openRaw(dir.file("m.sqlite"));
  store_schema::migrate(*db, fakeSteps(), 1);
  EXPECT_EQ(db->pragmaInt("user_version"), 1);
  EXPECT_EQ(db->pragmaInt("application_id"), store_schema::kApplicationId);
  EXPECT_TRUE(hasTable(*db, "a"));
  EXPECT_FALSE(hasTable(*db, "b"));
  db->exec("INSERT INTO a VALUES (5)");
  store_schema::migrate(*db, fakeSteps(), 2);
  EXPECT_EQ(db->pragmaInt("user_version"), 2);
  EXPECT_TRUE(hasTable(*db, "b"));
  SqliteStatement s = db->prepare("SELECT y FROM b");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.columnInt(0), 5);
  s.reset();
  store_schema::migrate(*db, fakeSteps(), 2);  // already there: nothing to do
  EXPECT_EQ(db->pragmaInt("user_version"), 2);
}

TEST(StoreMigration, AFailingStepLeavesTheDatabaseAsItWas) {
  test::TempDir dir;
  auto db = openRaw(dir.file("m.sqlite"));
  auto steps = fakeSteps();
  steps[1].apply = [](SqliteConnection& db) {
    db.exec("CREATE TABLE b(y INTEGER)");
    throw std::runtime_error("step failed half way");
  };
  EXPECT_THROW(store_schema::migrate(*db, steps, 2), std::runtime_error);
  EXPECT_EQ(db->pragmaInt("user_version"), 0);
  EXPECT_EQ(db->pragmaInt("application_id"), 0);
  EXPECT_FALSE(hasTable(*db, "a"));  // step 0 ran in the same transaction and is undone too
  EXPECT_FALSE(hasTable(*db, "b"));
}

TEST(StoreMigration, AMissingStepIsAnError) {
  test::TempDir dir;
  auto db = openRaw(dir.file("m.sqlite"));
  auto steps = fakeSteps();
  steps.pop_back();
  try {
    store_schema::migrate(*db, steps, 2);
    ADD_FAILURE() << "migrated without a step";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), StoreError::Kind::invalid);
    EXPECT_NE(std::string(e.what()).find("from schema 1 to 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db->pragmaInt("user_version"), 0);
  EXPECT_FALSE(hasTable(*db, "a"));
}

TEST(StoreMigration, ANewerDatabaseIsNotDowngraded) {
  test::TempDir dir;
  auto db = openRaw(dir.file("m.sqlite"));
  store_schema::migrate(*db, fakeSteps(), 2);
  try {
    store_schema::migrate(*db, fakeSteps(), 1);
    ADD_FAILURE() << "downgraded";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.kind(), StoreError::Kind::newer_schema);
  }
  EXPECT_EQ(db->pragmaInt("user_version"), 2);
}

TEST(StoreMigration, ThisBuildHasOneStepPerVersion) {
  const auto& steps = store_schema::migrations();
  ASSERT_EQ(static_cast<int>(steps.size()), Store::kSchemaVersion);
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].from_version, static_cast<int>(i));
    EXPECT_FALSE(steps[i].description.empty());
  }
}

// tests/data/v1.sqlite was written by the schema-1 store (see WriteV1Fixture). A write open
// migrates it to schema 2 keeping the data; a read open reads it as it is and changes nothing.
TEST(StoreMigration, VersionOneFixtureOpensWithItsData) {
  std::string fixture = std::string(ATTNSCOPE_STORE_FIXTURES) + "/v1.sqlite";
  ASSERT_TRUE(std::filesystem::exists(fixture)) << fixture;
  test::TempDir dir;
  std::string path = dir.file("v1.sqlite");
  std::filesystem::copy_file(fixture, path);  // never open the checked-in file itself
  {
    const std::string before = test::readBytes(path);
    Store reader(path, StoreMode::read);
    ASSERT_EQ(reader.sweeps().size(), 1u);
    EXPECT_EQ(reader.sweeps()[0].name, "fixture v1");
    EXPECT_EQ(reader.runs(reader.sweeps()[0].id).size(), 2u);
    EXPECT_TRUE(test::readBytes(path) == before) << "a read open migrated the file";
  }
  Store store(path, StoreMode::existing);
  auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 1u);
  EXPECT_EQ(sweeps[0].name, "fixture v1");
  EXPECT_EQ(sweeps[0].tags, (std::vector<std::string>{"fixture"}));
  EXPECT_EQ(store.environment(sweeps[0].environment_id).host, "fixture-host");
  auto runs = store.runs(sweeps[0].id);
  ASSERT_EQ(runs.size(), 2u);
  for (size_t i = 0; i < runs.size(); ++i) {
    auto full = store.run(runs[i].id);
    ASSERT_TRUE(full);
    test::expectSameRun(test::sampleRun(static_cast<int64_t>(i), 100), *full, true);
  }
}

// Runs saved before schema 3 had no kind, pass or checkpoint: read as they are (read mode) and
// after the write open's migration, they are forward attention calls without checkpointing, and
// the migrated file takes runs of the new fields.
TEST(StoreMigration, VersionOneRunsReadAsForwardAttention) {
  std::string fixture = std::string(ATTNSCOPE_STORE_FIXTURES) + "/v1.sqlite";
  test::TempDir dir;
  std::string path = dir.file("v1.sqlite");
  std::filesystem::copy_file(fixture, path);
  auto expectDefaults = [](Store& store) {
    const auto sweeps = store.sweeps();
    ASSERT_EQ(sweeps.size(), 1u);
    for (const RunResult& r : store.runs(sweeps[0].id)) {
      EXPECT_EQ(r.spec.kind, WorkloadKind::attention);
      EXPECT_EQ(r.spec.pass, Pass::forward);
      EXPECT_EQ(r.spec.checkpoint, Checkpoint::none);
    }
  };
  {
    Store reader(path, StoreMode::read);
    expectDefaults(reader);
  }
  Store store(path, StoreMode::existing);
  expectDefaults(store);
  {
    auto db = openRaw(path);
    EXPECT_EQ(db->pragmaInt("user_version"), Store::kSchemaVersion);
  }
  RunResult train = test::sampleRun(2, 100);
  train.spec.pass = Pass::train;
  train.spec.checkpoint = Checkpoint::attention;
  train.spec.kind = WorkloadKind::layer;
  train.spec.seq_kv = 0;  // a layer is self-attention
  const int64_t id = store.saveRun(store.sweeps()[0].id, train);
  const auto back = store.run(id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->spec, train.spec);
}

// Schema 6 gives every old sweep, run and recording its own UUID (distinct), and every old run its
// sweep's environment; the point index of an old run is unknown (-1). Read mode shows none.
TEST(StoreMigration, VersionSixGivesOldRowsUuidsAndTheirSweepsEnvironment) {
  test::TempDir dir;
  std::string path = dir.file("v1.sqlite");
  std::filesystem::copy_file(std::string(ATTNSCOPE_STORE_FIXTURES) + "/v1.sqlite", path);
  {
    Store reader(path, StoreMode::read);
    for (const SweepInfo& s : reader.sweeps()) EXPECT_TRUE(s.uuid.empty());
  }
  Store store(path, StoreMode::existing);
  std::set<std::string> uuids;
  for (const SweepInfo& s : store.sweeps()) {
    EXPECT_TRUE(isUuid(s.uuid)) << s.uuid;
    uuids.insert(s.uuid);
    const auto runs = store.runs(s.id);
    ASSERT_FALSE(runs.empty());
    for (const RunResult& r : runs) {
      EXPECT_TRUE(isUuid(r.uuid)) << r.uuid;
      uuids.insert(r.uuid);
      EXPECT_EQ(r.point_index, -1);
      EXPECT_EQ(r.environment_id, s.environment_id);
    }
    EXPECT_TRUE(store.pointIndexes(s.id).empty());
    EXPECT_EQ(store.sweepByUuid(s.uuid), s.id);
  }
  EXPECT_GT(uuids.size(), 2u);
  size_t rows = 0;
  for (const SweepInfo& s : store.sweeps()) rows += 1 + store.runs(s.id).size();
  EXPECT_EQ(uuids.size(), rows) << "two rows got the same UUID";
  // A new run keeps the point index and environment it is given.
  RunResult r = test::sampleRun(1, 2);
  r.point_index = 5;
  const int64_t id = store.saveRun(store.sweeps()[0].id, r);
  EXPECT_EQ(store.run(id)->point_index, 5);
  EXPECT_EQ(store.run(id)->environment_id, store.sweeps()[0].environment_id);
  EXPECT_TRUE(store.check().empty());
}

// Rewrites the fixture; run by hand only when the fixture must be recreated:
//   ATTNSCOPE_WRITE_FIXTURE=tests/data/v1.sqlite test_store --gtest_also_run_disabled_tests
//     --gtest_filter='*WriteV1Fixture*'
TEST(StoreMigration, DISABLED_WriteV1Fixture) {
  const char* out = std::getenv("ATTNSCOPE_WRITE_FIXTURE");
  ASSERT_TRUE(out) << "set ATTNSCOPE_WRITE_FIXTURE to the output path";
  ASSERT_EQ(Store::kSchemaVersion, 1) << "the v1 fixture must be written by a schema-1 build";
  std::filesystem::remove(out);
  {
    Store store(out);
    Environment env;
    env.host = "fixture-host";
    env.os = "Debian GNU/Linux 12 (bookworm)";
    env.app_version = "0.1.0";
    SweepSpec spec = test::sampleSweep("fixture v1");
    int64_t sweep = store.createSweep(spec, store.saveEnvironment(env));
    store.setSweepTags(sweep, {"fixture"});
    store.setSweepState(sweep, "finished");
    store.saveRun(sweep, test::sampleRun(0, 100));
    store.saveRun(sweep, test::sampleRun(1, 100));
  }
  // One self-contained file: switch the fixture out of WAL so no side files are needed.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(out, &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "PRAGMA journal_mode = DELETE; VACUUM", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace
}  // namespace attnscope
