// The real binary and the user's Python, with fake "pythons" (shell scripts, some running
// tests/torch/fake_torch_worker.py with the system's python3; no torch needed): one Python for
// explain and the torch backends, nothing waits forever, nothing outlives attnscope, and what a
// worker says is bounded, valid UTF-8 and escaped where printed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

class CliTorchWorker : public CliFixture {
 protected:
  CliTorchWorker() : CliFixture("clitorch") {}
  // An executable shell script in the test's folder.
  std::string script(const std::string& name, const std::string& body) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
  }
  // A fake python that logs "NAME" to calls.log and answers as torch `version`.
  std::string recorder(const std::string& name, const std::string& version, const std::string& folder = "") {
    if (!folder.empty()) std::filesystem::create_directories(dir_ + "/" + folder);
    return script((folder.empty() ? "" : folder + "/") + name,
                  "FAKE_LOG='" + dir_ + "/calls.log' FAKE_NAME=" + name + " FAKE_TORCH=" + version +
                      " exec '" ATTNSCOPE_TEST_SYSTEM_PYTHON "' '" ATTNSCOPE_FAKE_TORCH_WORKER "' record \"$@\"");
  }
  std::string fake(const std::string& name, const std::string& mode) {
    return script(name, "exec '" ATTNSCOPE_TEST_SYSTEM_PYTHON "' '" ATTNSCOPE_FAKE_TORCH_WORKER "' " + mode + " \"$@\"");
  }
  std::string calls() { return readFile(dir_ + "/calls.log"); }
};

// Whether the process exists and is not a zombie.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

// The pids a wrapper script wrote to `path` (itself, then its child), once both are there.
std::vector<pid_t> waitForPids(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(path);
    std::vector<pid_t> pids;
    for (pid_t p; in >> p;) pids.push_back(p);
    if (pids.size() == 2) return pids;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return {};
}

bool goneWithin(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool any = false;
    for (pid_t p : pids) any = any || alive(p);
    if (!any) return true;
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

TEST_F(CliTorchWorker, ExplainAndTheBackendsAskTheSamePython) {
  // A decoy python3 first on PATH: whoever falls back to the PATH gets caught.
  recorder("python3", "2.9.0", "bin");
  const std::string path = "PATH=" + dir_ + "/bin:" + std::getenv("PATH");
  const std::string env_python = recorder("env-python", "2.4.1"), cli_python = recorder("cli-python", "2.6.0");
  auto explainTorch = [&](std::vector<std::string> args, const std::vector<std::string>& env) {
    args.insert(args.begin(), {"explain", "--torch", "installed", "--gpu", "cpu", "--json"});
    CliResult r = runCli(args, env);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out)["target"]["torch"].get<std::string>() : std::string();
  };
  auto backendsOk = [&](std::vector<std::string> args, const std::vector<std::string>& env) {
    args.insert(args.begin(), {"backends", "--json"});
    CliResult r = runCli(args, env);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto listed = nlohmann::json::parse(r.out);  // alive while looped over
    for (const auto& b : listed["backends"])
      if (b["id"] == "torch.cpu.auto") return b["available"].get<bool>();
    return false;
  };
  // $ATTNSCOPE_PYTHON for both.
  EXPECT_EQ(explainTorch({}, {path, "ATTNSCOPE_PYTHON=" + env_python}), "2.4.1");
  EXPECT_TRUE(backendsOk({}, {path, "ATTNSCOPE_PYTHON=" + env_python}));
  EXPECT_EQ(calls(), "called as env-python\ncalled as env-python\n");
  // --python before $ATTNSCOPE_PYTHON, for both.
  std::filesystem::remove(dir_ + "/calls.log");
  EXPECT_EQ(explainTorch({"--python", cli_python}, {path, "ATTNSCOPE_PYTHON=" + env_python}), "2.6.0");
  EXPECT_TRUE(backendsOk({"--python", cli_python}, {path, "ATTNSCOPE_PYTHON=" + env_python}));
  EXPECT_EQ(calls(), "called as cli-python\ncalled as cli-python\n");
  // Neither: python3 on PATH, for both.
  std::filesystem::remove(dir_ + "/calls.log");
  EXPECT_EQ(explainTorch({}, {path, "ATTNSCOPE_PYTHON="}), "2.9.0");
  EXPECT_TRUE(backendsOk({}, {path, "ATTNSCOPE_PYTHON="}));
  EXPECT_EQ(calls(), "called as python3\ncalled as python3\n");
}

TEST_F(CliTorchWorker, ExplainHonoursTheTimeoutAndLeavesNothingBehind) {
  const std::string pids = dir_ + "/pids";
  const std::string hang = script("hang-python", "echo $$ > '" + pids + "'\nsleep 600 &\necho $! >> '" + pids + "'\nwait");
  const auto start = std::chrono::steady_clock::now();
  CliResult r = runCli({"explain", "--torch", "installed", "--python", hang}, {"ATTNSCOPE_TORCH_TIMEOUT=2"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--torch installed: " + hang + " did not answer within 2 s while starting (importing torch); "
                       "killed it (ATTNSCOPE_TORCH_TIMEOUT sets the limit)"),
            std::string::npos)
      << r.err;
  const std::vector<pid_t> started = waitForPids(pids);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_TRUE(goneWithin(started, std::chrono::seconds(2))) << "the hung python or its child survived";
}

TEST_F(CliTorchWorker, AWorkersChildrenDieWithAttnscopeHoweverItDies) {
  // A wrapper "python" that starts the real thing as its child instead of exec'ing it.
  for (int sig : {SIGKILL, SIGTERM}) {
    for (const char* command : {"backends", "explain"}) {
      SCOPED_TRACE(std::string(command) + " signal " + std::to_string(sig));
      const std::string pids = dir_ + "/pids-" + command + std::to_string(sig);
      const std::string wrapper =
          script("wrapper-python", "echo $$ > '" + pids + "'\nsleep 600 &\necho $! >> '" + pids + "'\nwait");
      std::vector<std::string> args = {command, "--python", wrapper};
      if (std::string(command) == "explain") args.insert(args.end(), {"--torch", "installed"});
      const pid_t attnscope = startCli(args);
      const std::vector<pid_t> started = waitForPids(pids);
      ASSERT_EQ(started.size(), 2u);
      ::kill(attnscope, sig);
      int status = 0;
      ::waitpid(attnscope, &status, 0);
      EXPECT_TRUE(goneWithin(started, std::chrono::seconds(3))) << "the wrapper or its child outlived attnscope";
    }
  }
}

TEST_F(CliTorchWorker, ABadTimeoutSettingExitsTwoNamingIt) {
  const std::string python = fake("ok-python", "ok");
  for (const char* v : {"0", "-1", "abc", "inf", "nan", "1e100"}) {
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
             {"backends"}, {"explain", "--torch", "installed"}, {"run", "--backend", "torch.cpu.auto", "--no-db"}}) {
      args.insert(args.end(), {"--python", python});
      CliResult r = runCli(args, {std::string("ATTNSCOPE_TORCH_TIMEOUT=") + v});
      SCOPED_TRACE(args[0] + " with " + v);
      expectUsageError(r, {"ATTNSCOPE_TORCH_TIMEOUT='" + std::string(v) + "'", "greater than 0 and at most 86400"});
    }
  }
}

TEST_F(CliTorchWorker, WorkerTextIsEscapedWherePrintedAndValidWhereStored) {
  // An escape sequence in a worker's hello error: printed escaped by run (stderr) and backends.
  const std::string escaping = fake("escaping-python", "hello_escape");
  for (bool backends : {false, true}) {
    const std::vector<std::string> args = {backends ? "backends" : "run", "--python", escaping};
    CliResult r = backends ? runCli(args) : run({"run", "--backend", "torch.cpu.auto", "--python", escaping});
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args[0];
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << args[0];
    EXPECT_NE((r.out + r.err).find("broken torch \\x1b]2;retitled\\x07 \\x1b[31mred"), std::string::npos)
        << args[0] << ": " << r.out << r.err;
  }
  // A --python path that is not UTF-8 runs, is stored, and prints as \xff (no JSON type_error 316).
  const std::string odd = fake("odd-\xff-python", "ok");
  CliResult r = run({"run", "--backend", "torch.cpu.auto", "--no-check", "--json", "--python", odd});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  CliResult runs = run({"runs", "--json"});
  ASSERT_EQ(runs.code, 0) << runs.err;
  const auto listed = nlohmann::json::parse(runs.out);
  ASSERT_FALSE(listed.empty());
  EXPECT_EQ(listed.back()["runs"][0]["status"], "ok") << runs.out;
  CliResult missing = runCli({"backends", "--json", "--python", dir_ + "/missing-\xff-python"});
  EXPECT_EQ(missing.code, 0) << missing.err;
  EXPECT_NE(missing.out.find("missing-\\\\xff-python (from --python): no such executable file"), std::string::npos)
      << missing.out;
}

TEST_F(CliTorchWorker, ShowOfARunWhoseWorkerDiedSaysWhatIsKnown) {
  CliResult r = run({"run", "--backend", "torch.cpu.auto", "--python", fake("dying-python", "die_in_run")});
  EXPECT_EQ(r.code, 1);
  CliResult show = run({"show", "R1"});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("status            error: " + dir_ + "/dying-python exited (exited with status 3) while running 'run'"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("torch peak      not measured (the run ended before torch's profiled call; see status)"),
            std::string::npos)
      << show.out;
  EXPECT_EQ(show.out.find("overhead"), std::string::npos) << show.out;
}
