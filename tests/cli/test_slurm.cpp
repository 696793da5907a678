// sweep --slurm against a real Slurm (scripts/slurm-local.sh start: slurmctld, slurmd, slurmdbd
// on this machine; CI starts it): a 3-task array followed with --wait merges every point exactly
// once with its task's environment; a task cancelled with scancel is named by `slurm status` and
// `slurm resume` completes only its missing points; two partitions give two sweeps; more tasks than
// the cluster's MaxArraySize (8 in scripts/slurm-local.sh) bundle points; Ctrl-C during --wait
// stops following, never the tasks, and `slurm status` later merges them. Skips with a message
// when no Slurm answers.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "tests/cli/cli_fixture.h"

namespace {

std::string shell(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  if (status) *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

class Slurm : public CliFixture {
 protected:
  Slurm() : CliFixture("slurm") {}
  void SetUp() override {
    CliFixture::SetUp();
    int status = 0;
    const std::string idle = shell("sinfo -h -o %T 2>&1", &status);
    const bool up = idle.find("idle") != std::string::npos || idle.find("mix") != std::string::npos ||
                    idle.find("alloc") != std::string::npos;
    if ((status != 0 || !up) && std::getenv("ATTNSCOPE_REQUIRE_SLURM"))
      FAIL() << "ATTNSCOPE_REQUIRE_SLURM is set but no Slurm answers (sinfo: " << idle << ")";
    if (status != 0 || !up)
      GTEST_SKIP() << "no Slurm answers here (sinfo: " << idle
                   << "); start one with: eval \"$(bash scripts/slurm-local.sh start)\"";
  }
  std::vector<std::string> grid(const std::string& reps) {
    return {"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "2,4,8", "--seq", "64,128", "--head-dim", "16",
            "--reps", reps, "--warmup", "0", "--slurm", "--tasks", "3", "--out", dir_ + "/shared", "--name", "cluster grid"};
  }
};

TEST_F(Slurm, AThreeTaskArrayFollowedWithWaitMergesEveryPointOnce) {
  auto args = grid("1");
  args.push_back("--wait");
  CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("12/12 points merged"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("COMPLETED"), std::string::npos) << r.err;
  attnscope::Store store(db_, attnscope::StoreMode::read);
  ASSERT_EQ(store.sweeps().size(), 1u);
  const auto sweep = store.sweeps()[0];
  EXPECT_EQ(sweep.state, "finished");
  EXPECT_EQ(sweep.run_count, 12);
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 12; ++i) all.push_back(i);
  EXPECT_EQ(store.pointIndexes(sweep.id), all);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (const auto& run : store.runs(sweep.id)) EXPECT_EQ(store.environment(run.environment_id).host, host);
  const auto tasks = store.slurmTasks(sweep.id);
  ASSERT_EQ(tasks.size(), 3u);
  for (const auto& t : tasks) {
    EXPECT_EQ(t.state, "COMPLETED");
    EXPECT_TRUE(t.merged);
  }
  // Merging the shards again by hand adds nothing.
  CliResult again = runCli({"merge", tasks[0].shard, tasks[1].shard, tasks[2].shard, "--into", db_});
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out.find("1 runs added"), std::string::npos);
  EXPECT_EQ(attnscope::Store(db_, attnscope::StoreMode::read).sweeps()[0].run_count, 12);
}

TEST_F(Slurm, ACancelledTaskIsNamedAndResumeRunsOnlyItsPoints) {
  auto args = grid("40");
  args.insert(args.end(), {"--parallel", "1"});
  CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, std::regex("S(\\d+) job (\\d+)"))) << r.out;
  const std::string sweep = "S" + m[1].str(), job = m[2].str();
  // Task 2 waits behind the others (--parallel 1): cancel it before it starts.
  shell("scancel " + job + "_2");
  CliResult status;
  for (int i = 0; i < 300; ++i) {
    status = run({"slurm", "status", sweep, "--json"});
    const auto j = nlohmann::json::parse(status.out, nullptr, false);
    bool live = false;
    if (j.is_object())
      for (const auto& t : j["tasks"]) live = live || t["state"] == "PENDING" || t["state"] == "RUNNING";
    if (j.is_object() && !live) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(status.code, 1) << "points are missing: status says so";
  const auto j = nlohmann::json::parse(status.out);
  std::map<std::string, std::string> states;
  int64_t saved_before = j["saved"].get<int64_t>();
  for (const auto& t : j["tasks"]) states[t["task"].get<std::string>()] = t["state"].get<std::string>();
  EXPECT_EQ(states[job + "_2"], "CANCELLED") << status.out;
  EXPECT_EQ(states[job + "_0"], "COMPLETED") << status.out;
  EXPECT_LT(saved_before, 12);
  CliResult text = run({"slurm", "status", sweep});
  EXPECT_NE(text.out.find(job + "_2"), std::string::npos);
  EXPECT_NE(text.out.find("CANCELLED"), std::string::npos) << text.out;

  CliResult resume = run({"slurm", "resume", sweep, "--wait"});
  ASSERT_EQ(resume.code, 0) << resume.out << resume.err;
  EXPECT_NE(resume.out.find(std::to_string(12 - saved_before) + " missing points resubmitted"), std::string::npos) << resume.out;
  attnscope::Store store(db_, attnscope::StoreMode::read);
  const auto info = store.sweeps()[0];
  EXPECT_EQ(info.run_count, 12) << "a point saved before was run again, or one is missing";
  EXPECT_EQ(store.pointIndexes(info.id).size(), 12u);
  EXPECT_EQ(info.state, "finished");
  CliResult nothing = run({"slurm", "resume", sweep});
  EXPECT_EQ(nothing.code, 0);
  EXPECT_NE(nothing.out.find("nothing to resume"), std::string::npos);
}

// The local cluster has two partitions (debug, second) and MaxArraySize=8: 12 tasks asked become
// 8, each partition runs the grid as a sweep of its own, and the two compare.
TEST_F(Slurm, TwoPartitionsRunOneSweepEachAndBigArraysAreBundled) {
  int status = 0;
  const std::string limit = shell("scontrol show config | grep MaxArraySize", &status);
  if (limit.find("= 8") == std::string::npos)
    GTEST_SKIP() << "this Slurm's MaxArraySize is not scripts/slurm-local.sh's 8: " << limit;
  auto args = grid("1");
  args[args.size() - 5] = "12";  // --tasks 12
  args.insert(args.end(), {"--partition", "debug,second", "--wait"});
  CliResult r = run(args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("12 points in 8 tasks (capped from 12 by MaxArraySize 8"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" on debug;"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" on second;"), std::string::npos) << r.err;
  attnscope::Store store(db_, attnscope::StoreMode::read);
  const auto sweeps = store.sweeps();
  ASSERT_EQ(sweeps.size(), 2u);
  std::map<std::string, int64_t> by_name;
  for (const auto& s : sweeps) {
    by_name[s.name] = s.id;
    EXPECT_EQ(s.state, "finished") << s.name;
    EXPECT_EQ(s.run_count, 12) << s.name;
    EXPECT_EQ(store.pointIndexes(s.id).size(), 12u) << s.name;
    EXPECT_EQ(store.slurmTasks(s.id).size(), 8u) << s.name;
    EXPECT_NE(s.uuid, sweeps[0].id == s.id ? sweeps[1].uuid : sweeps[0].uuid);
  }
  ASSERT_TRUE(by_name.count("cluster grid [debug]") && by_name.count("cluster grid [second]")) << r.err;
  EXPECT_EQ(store.sweep(by_name["cluster grid [debug]"])->cluster.value("partition", ""), "debug");
  EXPECT_EQ(store.sweep(by_name["cluster grid [second]"])->cluster.value("partition", ""), "second");
  CliResult cmp = run({"compare", "S" + std::to_string(sweeps[0].id), "S" + std::to_string(sweeps[1].id)});
  EXPECT_EQ(cmp.code, 0) << cmp.err;
  EXPECT_NE(cmp.out.find("cpu.flash"), std::string::npos) << cmp.out;
}

// Ctrl-C while --wait follows: the command stops following (exit 130, says how to go on), the
// tasks keep running, and `slurm status` later finds them ended and merges every shard.
TEST_F(Slurm, CtrlCDuringWaitStopsFollowingNotTheTasks) {
  auto args = grid("40");
  args.insert(args.end(), {"--parallel", "1", "--wait", "--db", db_});
  const std::string err_file = dir_ + "/wait.err";
  std::vector<char*> argv;
  std::string bin = ATTNSCOPE_BIN;
  argv.push_back(bin.data());
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int fd = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_WRONLY);
    dup2(fd, 2);
    dup2(null, 1);
    execv(argv[0], argv.data());
    _exit(127);
  }
  // Interrupt once it follows the submitted job (its first progress line).
  for (int i = 0; i < 600 && readFile(err_file).find("points merged; tasks:") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_NE(readFile(err_file).find("submitted as Slurm job"), std::string::npos) << readFile(err_file);
  kill(pid, SIGINT);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "killed by signal " << WTERMSIG(wstatus) << ": " << readFile(err_file);
  const std::string err = readFile(err_file);
  EXPECT_EQ(WEXITSTATUS(wstatus), 130) << err;
  EXPECT_NE(err.find("stopped following S1; its tasks keep running"), std::string::npos) << err;
  {
    attnscope::Store store(db_, attnscope::StoreMode::read);
    ASSERT_EQ(store.sweeps().size(), 1u);
    EXPECT_EQ(store.sweeps()[0].state, "submitted") << "an interrupted follow leaves the sweep submitted";
    EXPECT_TRUE(store.check().empty());
  }
  CliResult status;
  for (int i = 0; i < 300; ++i) {
    status = run({"slurm", "status", "S1", "--json"});
    const auto j = nlohmann::json::parse(status.out, nullptr, false);
    if (j.is_object() && j["saved"] == 12) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  EXPECT_EQ(status.code, 0) << status.out << status.err;
  attnscope::Store store(db_, attnscope::StoreMode::read);
  EXPECT_EQ(store.sweeps()[0].state, "finished");
  EXPECT_EQ(store.sweeps()[0].run_count, 12);
}

}  // namespace
