// attnscope merge: shards of one sweep recombine into one sweep, each point with the environment
// that ran it; merging twice adds nothing; a foreign, damaged or newer source is refused
// untouched; a merge killed with SIGKILL leaves the destination sound and a rerun completes it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <thread>

#include "core/base/uuid.h"
#include "core/result/environment.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

Environment machine(const std::string& host, const std::string& gpu) {
  Environment e;
  e.host = host;
  e.os = "Linux";
  e.cpu = "test cpu";
  GpuInfo g;
  g.name = gpu;
  e.gpus.push_back(g);
  e.app_version = "test";
  return e;
}

// One shard database of `spec` holding the given global points, run on `host`.
void writeShard(const std::string& path, const SweepSpec& spec, const std::string& uuid, const std::vector<int64_t>& points,
                const std::string& host, int64_t events = 3) {
  Store store(path);
  const int64_t env = store.saveEnvironment(machine(host, "H100"));
  const int64_t id = store.createSweep(spec, env, uuid);
  for (int64_t p : points) {
    RunResult r = test::sampleRun(p, events);
    r.point_index = p;
    store.saveRun(id, r);
  }
  store.setSweepState(id, "finished");
}

void exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(StoreMerge, ShardsOfOneSweepBecomeOneSweepWithEachPointsEnvironment) {
  test::TempDir dir;
  const SweepSpec spec = test::sampleSweep("grid");  // 4 grid points x 2 backends = 8 points
  const std::string uuid = newUuid();
  writeShard(dir.file("a.sqlite"), spec, uuid, {0, 3, 5}, "node-a");
  writeShard(dir.file("b.sqlite"), spec, uuid, {1, 2, 4, 6, 7}, "node-b");
  Store into(dir.file("all.sqlite"));
  MergeReport a = into.merge(dir.file("a.sqlite"));
  ASSERT_TRUE(a.refused.empty()) << a.refused;
  EXPECT_EQ(a.sweeps_added, 1);
  EXPECT_EQ(a.runs_added, 3);
  EXPECT_EQ(a.events_added, 9);
  MergeReport b = into.merge(dir.file("b.sqlite"));
  EXPECT_EQ(b.sweeps_added, 0);
  EXPECT_EQ(b.sweeps_joined, 1);
  EXPECT_EQ(b.runs_added, 5);
  ASSERT_EQ(into.sweeps().size(), 1u);
  const SweepInfo sweep = into.sweeps().front();
  EXPECT_EQ(sweep.uuid, uuid);
  EXPECT_EQ(sweep.state, "finished");
  EXPECT_EQ(into.pointIndexes(sweep.id), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::set<std::string> hosts;
  for (const RunResult& r : into.runs(sweep.id)) {
    const std::string host = into.environment(r.environment_id).host;
    hosts.insert(host);
    EXPECT_EQ(host, (r.point_index == 0 || r.point_index == 3 || r.point_index == 5) ? "node-a" : "node-b") << r.point_index;
    EXPECT_TRUE(isUuid(r.uuid));
    // The run, its trace and its phases as the shard had them.
    RunResult expected = test::sampleRun(r.point_index, 3);
    auto full = into.run(r.id);
    ASSERT_TRUE(full);
    test::expectSameRun(expected, *full, true);
  }
  EXPECT_EQ(hosts.size(), 2u);
  EXPECT_TRUE(into.check().empty());
}

// What a merged sweep is, beyond its runs: its own environment; a copy of a sweep still running
// elsewhere reads as interrupted (it never runs here); shards joined by hand end as the worst of
// their states; a point already here under another run UUID (a task rerun by `slurm resume`) is
// not added twice; a submitted sweep is finished only once its last point is in.
TEST(StoreMerge, AMergedSweepsEnvironmentStateAndPointsAreRight) {
  test::TempDir dir;
  const SweepSpec spec = test::sampleSweep("grid");  // 8 points
  {
    const std::string uuid = newUuid();
    writeShard(dir.file("running.sqlite"), spec, uuid, {0, 1}, "node-r");
    exec(dir.file("running.sqlite"), "UPDATE sweeps SET state = 'running'");
    Store into(dir.file("copy.sqlite"));
    ASSERT_TRUE(into.merge(dir.file("running.sqlite")).refused.empty());
    const SweepInfo sweep = into.sweeps().front();
    EXPECT_EQ(sweep.state, "interrupted") << "a copy of a running sweep never runs here";
    ASSERT_NE(sweep.environment_id, 0) << "the sweep's environment was not merged";
    EXPECT_EQ(into.environment(sweep.environment_id).host, "node-r");
  }
  {
    const std::string uuid = newUuid();
    writeShard(dir.file("a.sqlite"), spec, uuid, {0, 1, 2, 3}, "node-a");
    writeShard(dir.file("b.sqlite"), spec, uuid, {4, 5}, "node-b");
    exec(dir.file("b.sqlite"), "UPDATE sweeps SET state = 'cancelled'");
    writeShard(dir.file("again.sqlite"), spec, uuid, {3}, "node-c");  // point 3 rerun: another run UUID
    Store into(dir.file("joined.sqlite"));
    ASSERT_TRUE(into.merge(dir.file("a.sqlite")).refused.empty());
    EXPECT_EQ(into.sweeps().front().state, "finished");
    ASSERT_TRUE(into.merge(dir.file("b.sqlite")).refused.empty());
    EXPECT_EQ(into.sweeps().front().state, "cancelled") << "joined shards end as the worst of their states";
    const MergeReport again = into.merge(dir.file("again.sqlite"));
    EXPECT_EQ(again.runs_added, 0);
    EXPECT_EQ(again.runs_skipped, 1);
    EXPECT_EQ(into.sweeps().front().run_count, 6);
    EXPECT_EQ(into.pointIndexes(into.sweeps().front().id), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  }
  {
    const std::string uuid = newUuid();
    Store into(dir.file("submitted.sqlite"));
    const int64_t id = into.createSweep(spec, 0, uuid);
    into.setSweepCluster(id, nlohmann::json{{"job", "41"}}, "submitted");
    writeShard(dir.file("first.sqlite"), spec, uuid, {0, 1, 2, 3, 4, 5, 6}, "node-a");
    writeShard(dir.file("last.sqlite"), spec, uuid, {7}, "node-b");
    ASSERT_TRUE(into.merge(dir.file("first.sqlite")).refused.empty());
    EXPECT_EQ(into.sweeps().front().state, "submitted") << "7 of 8 points in";
    ASSERT_TRUE(into.merge(dir.file("last.sqlite")).refused.empty());
    EXPECT_EQ(into.sweeps().front().state, "finished");
  }
}

TEST(StoreMerge, MergingTwiceAddsNothing) {
  test::TempDir dir;
  const SweepSpec spec = test::sampleSweep("grid");
  writeShard(dir.file("a.sqlite"), spec, newUuid(), {0, 1, 2}, "node-a");
  {
    Store src(dir.file("a.sqlite"), StoreMode::existing);
    Recording rec;
    rec.name = "train.py";
    rec.program = {"python", "train.py"};
    rec.complete = true;
    src.saveRecording(rec);
  }
  Store into(dir.file("all.sqlite"));
  MergeReport first = into.merge(dir.file("a.sqlite"));
  EXPECT_EQ(first.runs_added, 3);
  EXPECT_EQ(first.recordings_added, 1);
  MergeReport again = into.merge(dir.file("a.sqlite"));
  EXPECT_EQ(again.sweeps_added, 0);
  EXPECT_EQ(again.runs_added, 0);
  EXPECT_EQ(again.runs_skipped, 3);
  EXPECT_EQ(again.recordings_added, 0);
  EXPECT_EQ(again.recordings_skipped, 1);
  EXPECT_EQ(into.sweeps().size(), 1u);
  EXPECT_EQ(into.sweeps().front().run_count, 3);
  EXPECT_EQ(into.recordings().size(), 1u);
  // And the merged copy merged back into the source adds nothing either: identity travels.
  Store back(dir.file("a.sqlite"), StoreMode::existing);
  MergeReport reverse = back.merge(dir.file("all.sqlite"));
  EXPECT_EQ(reverse.runs_added, 0);
  EXPECT_EQ(reverse.sweeps_added, 0);
}

TEST(StoreMerge, ALegacySourceWithoutUuidsMergesOnceToo) {
  // A schema-1 file (tests/data/v1.sqlite) read as it is: its rows have no UUIDs; theirs are
  // derived from what they hold, so a second merge still adds nothing, and the source keeps
  // every byte.
  test::TempDir dir;
  const std::string src = dir.file("v1.sqlite");
  test::writeBytes(src, test::readBytes(std::string(ATTNSCOPE_STORE_FIXTURES) + "/v1.sqlite"));
  const std::string before = test::readBytes(src);
  Store into(dir.file("all.sqlite"));
  MergeReport first = into.merge(src);
  ASSERT_TRUE(first.refused.empty()) << first.refused;
  EXPECT_GT(first.runs_added, 0);
  MergeReport again = into.merge(src);
  EXPECT_EQ(again.runs_added, 0);
  EXPECT_EQ(again.sweeps_added, 0);
  EXPECT_EQ(test::readBytes(src), before);
}

TEST(StoreMerge, ForeignDamagedNewerAndSelfAreRefusedUntouched) {
  test::TempDir dir;
  writeShard(dir.file("good.sqlite"), test::sampleSweep("g"), newUuid(), {0}, "node");
  const std::string newer = dir.file("newer.sqlite");
  writeShard(newer, test::sampleSweep("n"), newUuid(), {0}, "node");
  exec(newer, "PRAGMA journal_mode = DELETE; PRAGMA user_version = " + std::to_string(Store::kSchemaVersion + 1));
  const std::string foreign = dir.file("foreign.sqlite");
  exec(foreign, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
  const std::string damaged = dir.file("damaged.sqlite");
  writeShard(damaged, test::sampleSweep("d"), newUuid(), {0, 1}, "node");
  exec(damaged, "PRAGMA journal_mode = DELETE; UPDATE runs SET status = 'lots'");
  const std::string text = dir.file("notes.txt");
  test::writeBytes(text, "not a database\n");

  Store into(dir.file("all.sqlite"));
  into.merge(dir.file("good.sqlite"));
  const std::string into_before = test::readBytes(dir.file("all.sqlite"));
  for (const std::string& src : {newer, foreign, damaged, text, dir.file("all.sqlite")}) {
    SCOPED_TRACE(src);
    const std::string before = test::readBytes(src);
    MergeReport r = into.merge(src);
    EXPECT_FALSE(r.refused.empty());
    EXPECT_EQ(r.runs_added, 0);
    EXPECT_EQ(test::readBytes(src), before);
  }
  EXPECT_NE(into.merge(newer).refused.find("newer AttnScope"), std::string::npos);
  EXPECT_NE(into.merge(foreign).refused.find("not an AttnScope database"), std::string::npos);
  EXPECT_NE(into.merge(damaged).refused.find("damaged"), std::string::npos);
  EXPECT_NE(into.merge(dir.file("all.sqlite")).refused.find("being merged into"), std::string::npos);
  EXPECT_EQ(into.sweeps().size(), 1u);
  EXPECT_EQ(into.sweeps().front().run_count, 1);
}

TEST(StoreMerge, SameUuidWithAnotherGridIsRefusedAndNothingIsAdded) {
  test::TempDir dir;
  const std::string uuid = newUuid();
  writeShard(dir.file("a.sqlite"), test::sampleSweep("g"), uuid, {0}, "node");
  SweepSpec other = test::sampleSweep("g");
  other.axes[0].values = {"2", "4"};
  writeShard(dir.file("b.sqlite"), other, uuid, {1}, "node");
  Store into(dir.file("all.sqlite"));
  into.merge(dir.file("a.sqlite"));
  EXPECT_THROW(into.merge(dir.file("b.sqlite")), StoreError);
  EXPECT_EQ(into.sweeps().front().run_count, 1);
}

TEST(StoreMerge, SigkillDuringAMergeLeavesTheDestinationSoundAndARerunCompletesIt) {
  test::TempDir dir;
  const SweepSpec spec = test::sampleSweep("big");
  std::vector<int64_t> points;
  for (int64_t p = 0; p < 8; ++p) points.push_back(p);
  // Large traces, so the merge's one transaction takes long enough to be killed inside it.
  writeShard(dir.file("big.sqlite"), spec, newUuid(), points, "node", 60000);
  const std::string into_path = dir.file("all.sqlite");
  { Store create(into_path); }
  // Killed before its commit at least once (the destination then holds nothing of the source);
  // a kill that comes just after the commit finds all of it: never a part.
  bool killed_before_commit = false;
  for (int attempt = 0; attempt < 5 && !killed_before_commit; ++attempt) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      Store into(into_path, StoreMode::existing);
      into.merge(dir.file("big.sqlite"));
      _exit(0);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 50 * attempt));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    Store check(into_path, StoreMode::existing);
    EXPECT_TRUE(check.check().empty());
    const auto sweeps = check.sweeps();
    if (!sweeps.empty()) {
      EXPECT_EQ(sweeps.front().run_count, 8) << "a part of the source was committed";
      break;  // the merge finished before the kill: nothing left to interrupt
    }
    killed_before_commit = WIFSIGNALED(status);
  }
  EXPECT_TRUE(killed_before_commit) << "the merge always finished before the kill: make the source larger";
  Store into(into_path, StoreMode::existing);
  MergeReport rerun = into.merge(dir.file("big.sqlite"));
  EXPECT_EQ(rerun.runs_added, 8);
  EXPECT_EQ(into.sweeps().front().run_count, 8);
  EXPECT_TRUE(into.check().empty());
}

}  // namespace
}  // namespace attnscope
