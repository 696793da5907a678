// The real binary's sweep --shard, merge and sweep --slurm --dry-run: the shards of one sweep,
// run as separate processes into separate databases, merge into one sweep with every point once.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "tests/cli/cli_fixture.h"

namespace {

class CliCluster : public CliFixture {
 protected:
  CliCluster() : CliFixture("cluster") {}
  std::vector<std::string> grid() {
    return {"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "2,4", "--seq", "32,64,96", "--head-dim", "8",
            "--reps", "1", "--warmup", "0", "--quiet", "--name", "grid"};
  }
};

TEST_F(CliCluster, ShardsRunAsSeparateProcessesMergeIntoOneSweep) {
  const std::string uuid = "0b1e4f6a-2c3d-4e5f-8a9b-0c1d2e3f4a5b";
  std::vector<std::string> shards;
  for (int k = 0; k < 3; ++k) {
    auto args = grid();
    shards.push_back(dir_ + "/shard" + std::to_string(k) + ".sqlite");
    args.insert(args.end(), {"--shard", std::to_string(k) + "/3", "--sweep-uuid", uuid, "--db", shards.back()});
    CliResult r = runCli(args);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  std::vector<std::string> merge = {"merge"};
  merge.insert(merge.end(), shards.begin(), shards.end());
  for (const char* a : {"--into", db_.c_str(), "--json"}) merge.push_back(a);
  CliResult m = runCli(merge);
  ASSERT_EQ(m.code, 0) << m.err;
  const auto j = nlohmann::json::parse(m.out);
  ASSERT_EQ(j["sources"].size(), 3u);
  int64_t added = 0;
  for (const auto& s : j["sources"]) added += s["runs_added"].get<int64_t>();
  EXPECT_EQ(added, 12);
  EXPECT_EQ(j["sources"][0]["sweeps_added"], 1);
  EXPECT_EQ(j["sources"][1]["sweeps_joined"], 1);
  {
    attnscope::Store store(db_, attnscope::StoreMode::read);
    ASSERT_EQ(store.sweeps().size(), 1u);
    EXPECT_EQ(store.sweeps()[0].uuid, uuid);
    EXPECT_EQ(store.sweeps()[0].state, "finished");
    std::vector<int64_t> all(12);
    for (int64_t i = 0; i < 12; ++i) all[static_cast<size_t>(i)] = i;
    EXPECT_EQ(store.pointIndexes(store.sweeps()[0].id), all);
  }
  // Again: nothing added, and the text report says so.
  merge.pop_back();
  CliResult again = runCli(merge);
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("0 runs added"), std::string::npos) << again.out;
  // A refused source: exit 1, the others still merged, the reason printed.
  CliResult bad = runCli({"merge", "/etc/hostname", shards[0], "--into", db_});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("refused /etc/hostname: /etc/hostname is not an AttnScope database"), std::string::npos) << bad.out;
}

// Merging into a database this user may not write: refused before anything is read or written,
// exit 2 (as every command that saves into a read-only database), the file unchanged. As root the
// merge runs as nobody (runuser), since root ignores permission bits.
TEST_F(CliCluster, MergeIntoAReadOnlyDatabaseIsRefusedUntouched) {
  const std::string src = dir_ + "/src.sqlite", into = dir_ + "/into.sqlite";
  for (const auto& [db, name] : {std::pair{src, "from"}, std::pair{into, "into"}})
    ASSERT_EQ(runCli({"sweep", "--backends", "cpu.reference", "--heads", "1", "--seq", "16", "--head-dim", "8", "--reps",
                      "1", "--warmup", "0", "--quiet", "--name", name, "--db", db}).code, 0);
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(src.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(into.c_str(), 0444), 0);
  const std::string before = readFile(into);
  // A copy nobody can reach (the build folder may sit under a private home).
  const std::string bin = dir_ + "/attnscope";
  std::filesystem::copy_file(ATTNSCOPE_BIN, bin);
  std::string cmd = bin + " merge '" + src + "' --into '" + into + "' 2>&1";
  if (geteuid() == 0) cmd = "runuser -u nobody -- " + cmd;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  ASSERT_TRUE(WIFEXITED(rc));
  EXPECT_EQ(WEXITSTATUS(rc), 2) << out;
  EXPECT_NE(out.find("into.sqlite is read-only"), std::string::npos) << out;
  EXPECT_TRUE(readFile(into) == before);
  for (const char* side : {"-wal", "-shm", "-journal"}) EXPECT_FALSE(std::filesystem::exists(into + side)) << side;
  ::chmod(into.c_str(), 0644);
  EXPECT_EQ(attnscope::Store(into, attnscope::StoreMode::read).sweeps().size(), 1u);
}

TEST_F(CliCluster, BadShardOptionsAreUsageErrors) {
  auto with = [&](std::vector<std::string> extra) {
    auto a = grid();
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  expectUsageError(with({"--shard", "3/3"}), {"--shard: K must be 0 to 2"});
  expectUsageError(with({"--shard", "x"}), {"--shard: 'x' is not K/N"});
  expectUsageError(with({"--points", "5,2"}), {"--points: points must ascend"});
  expectUsageError(with({"--points", "12"}), {"--points: point 12 is not in this sweep (it has 12 points, 0 to 11)"});
  expectUsageError(with({"--sweep-uuid", "nope"}), {"--sweep-uuid: 'nope' is not a UUID"});
  expectUsageError(with({"--tasks", "3"}), {"--tasks needs --slurm"});
  expectUsageError(with({"--slurm", "--shard", "0/2", "--dry-run"}), {"--shard and --slurm are exclusive"});
  expectUsageError(runCli({"merge", "a.sqlite"}), {"--into DB is required"});
  expectUsageError(runCli({"merge", "--into", db_}), {"at least one source"});
}

TEST_F(CliCluster, SlurmDryRunPrintsTheArrayScriptAndSubmitsNothing) {
  auto a = grid();
  for (const char* x : {"--slurm", "--tasks", "3", "--parallel", "2", "--partition", "gpu", "--gres", "gpu:1",
                               "--time", "00:30:00", "--sbatch-arg", "--exclusive", "--sbatch-arg", "--qos=low", "--dry-run",
                               "--out"})
    a.push_back(x);
  a.push_back(dir_ + "/shared");
  CliResult r = run(a);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"#SBATCH --array=0-2%2", "#SBATCH --partition=gpu", "#SBATCH --gres=gpu:1", "#SBATCH --time=00:30:00",
                           "#SBATCH --exclusive", "#SBATCH --qos=low", "--shard \"$task/3\"", "12 points in 3 tasks",
                           "mv -f \"$dest.part\" \"$dest\""})
    EXPECT_NE(r.out.find(line), std::string::npos) << "missing " << line << " in\n" << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/shared")) << "--dry-run wrote files";
  EXPECT_FALSE(std::filesystem::exists(db_)) << "--dry-run opened the database";
}

}  // namespace
