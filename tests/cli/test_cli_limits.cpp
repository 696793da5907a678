// The real binary against hostile sizes, files and lists: a wrong result is never ok, sizes from
// outside cost nothing until checked, allocation failures are a point's oom, and every bad list or
// number is refused with the option and its limit (exit 2).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "tests/support/sanitizers.h"

namespace fs = std::filesystem;

// An ASan-built binary reserves terabytes of shadow address space at start, so it cannot start
// under RLIMIT_AS at all. There the limit is not set: the refusals below come from the memory
// guard either way, and ASan itself aborts on any huge allocation, so they still prove that
// nothing is allocated before the checks. Only the test that needs a real allocation failure
// skips.
using attnscope::test::kAddressSanitized;

namespace {

class CliLimits : public CliFixture {
 protected:
  CliLimits() : CliFixture("clilimits") {}
};

// Runs attnscope under an address-space limit (what `ulimit -v` sets).
CliResult runUnderAddressLimit(const std::vector<std::string>& args, int64_t bytes) {
  return runCliUnderLimit(args, RLIMIT_AS, kAddressSanitized ? RLIM_INFINITY : static_cast<rlim_t>(bytes));
}

}  // namespace

TEST_F(CliLimits, AWrongResultIsStatusWrongExitOneAndNotCountedOk) {
  CliResult r = run({"run", "--backend", "cpu.flash", "--heads", "2", "--seq", "64", "--scale", "3e38", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "wrong");
  EXPECT_EQ(j["accuracy"]["passed"], false);
  EXPECT_NE(r.err.find("accuracy check failed"), std::string::npos) << r.err;
  CliResult sw = run({"sweep", "--backends", "cpu.flash", "--heads", "2", "--seq", "64", "--scale", "3e38,1", "--quiet"});
  // The sweep finished, but a point is wrong: exit 1, saying which (an error point the same).
  EXPECT_EQ(sw.code, 1) << sw.err;
  EXPECT_NE(sw.err.find("1 of 2 points failed in sweep S2 (1 wrong: failed the accuracy check)"), std::string::npos)
      << sw.err;
  auto runs = nlohmann::json::parse(run({"runs", "--json"}).out);
  ASSERT_EQ(runs.size(), 2u);
  for (const auto& s : runs) {
    int wrong = 0;
    for (const auto& p : s["runs"]) wrong += p["status"] == "wrong";
    EXPECT_EQ(s["ok_count"].get<int>(), static_cast<int>(s["runs"].size()) - wrong) << s.dump();
    EXPECT_EQ(wrong, 1) << s.dump();
  }
}

TEST_F(CliLimits, HugeSpecsAreRefusedAtOnceWithoutAllocating) {
  // Each would take gigabytes if anything were allocated before the checks; under a 1 GiB
  // address-space limit an allocation would fail instead of passing unnoticed.
  CliResult r = runUnderAddressLimit({"run", "--no-db", "--backend", "cpu.reference", "--heads", "64", "--seq", "65536"}, int64_t{1} << 30);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("oom"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not run"), std::string::npos) << r.err;
  r = runUnderAddressLimit({"run", "--no-db", "--backend", "cpu.flash", "--batch", "100000", "--heads", "64", "--seq", "1024"}, int64_t{1} << 30);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("not run"), std::string::npos) << r.err;
  r = runUnderAddressLimit({"run", "--no-db", "--backend", "cpu.flash", "--heads", "1099511627776", "--seq", "1"}, int64_t{1} << 30);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("not run"), std::string::npos) << r.err;
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "35184372088832", "--seq", "4096"}),
                   {"heads", "at most"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--batch", "35184372088832", "--seq", "4096"}),
                   {"batch", "at most"});
}

TEST_F(CliLimits, AllocationFailureIsThatPointsOomAndTheSweepGoesOn) {
  if (kAddressSanitized) GTEST_SKIP() << "an ASan-built binary cannot run under RLIMIT_AS; the plain builds run this";
  CliResult r = runUnderAddressLimit({"sweep", "--backends", "cpu.flash", "--heads", "64", "--seq", "65536,64", "--reps",
                                      "1", "--quiet", "--json", "--db", db_}, int64_t{2500000} * 1024);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["status"], "oom");
  EXPECT_GT(j["runs"][0]["memory"]["predicted_peak"].get<int64_t>(), 0);
  EXPECT_EQ(j["runs"][1]["status"], "ok");
  auto runs = nlohmann::json::parse(run({"runs", "--json"}).out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["state"], "finished");
}

TEST_F(CliLimits, HostileNpyFilesAreRefusedFastNamingTheFile) {
  const std::string in = dir_ + "/in";
  fs::create_directories(in);
  ASSERT_EQ(mkfifo((in + "/q.npy").c_str(), 0600), 0);
  const std::vector<std::string> spec{"run", "--no-db", "--backend", "cpu.flash", "--heads", "1", "--seq", "4",
                                      "--head-dim", "4", "--inputs", in};
  expectUsageError(runCli(spec), {"q.npy", "not a regular file"});
  fs::remove(in + "/q.npy");
  // An 8 KB file claiming a 4 GiB array: refused from the header and the file size.
  std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1024, 1048576), }";
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::ofstream(in + "/q.npy", std::ios::binary)
      << std::string("\x93NUMPY\x01\x00", 8) << static_cast<char>(h.size() & 0xff) << static_cast<char>(h.size() >> 8) << h
      << std::string(8000, '\0');
  expectUsageError(runCli(spec), {"q.npy", "truncated", "4294967296", "8000"});
}

TEST_F(CliLimits, ListsAndNumbersAreRefusedWithTheOptionAndItsLimit) {
  const std::vector<std::string> sweep{"sweep", "--backends", "cpu.flash", "--seq", "8", "--head-dim", "8"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = sweep;
    a.insert(a.end(), extra.begin(), extra.end());
    return run(a);
  };
  expectUsageError(with({"--heads", "2,2"}), {"--heads", "'2' is given twice"});
  expectUsageError(with({"--heads", "2,,4"}), {"--heads", "empty item"});
  expectUsageError(with({"--heads", "2,"}), {"--heads", "empty item"});
  expectUsageError(run({"sweep", "--backends", "cpu.flash,cpu.flash", "--seq", "8"}), {"--backends", "given twice"});
  expectUsageError(run({"sweep", "--backends", "cpu.nope", "--seq", "8"}), {"--backends: unknown backend 'cpu.nope'"});
  expectUsageError(with({"--budget", "1e30"}), {"--budget", "at most"});
  expectUsageError(with({"--budget", " 8GiB"}), {"--budget"});
  expectUsageError(with({"--reps", "2147483647"}), {"--reps", "1..100000"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--reps", "2147483647"}), {"--reps", "1..100000"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--scale", ""}), {"--scale needs a value"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", " 8"}), {"heads", "whitespace"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--mask", "dense: 0.5"}), {"mask", "whitespace"});
  // 100^4 = 10^8 points: refused before anything is expanded.
  std::string hundred;
  for (int i = 1; i <= 100; ++i) hundred += (i > 1 ? "," : "") + std::to_string(i);
  expectUsageError(run({"sweep", "--backends", "cpu.flash", "--heads", hundred, "--seq", hundred, "--batch", hundred,
                        "--seed", hundred}),
                   {"100000000 points", "at most 100000"});
  EXPECT_FALSE(fs::exists(db_));  // nothing ran, nothing was saved
}

TEST_F(CliLimits, DumpTargetIsCheckedBeforeTheRun) {
  const std::string file = dir_ + "/afile";
  std::ofstream(file) << "x";
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "1", "--seq", "4", "--dump", file}),
                   {"--dump", "not a folder"});
  EXPECT_FALSE(fs::exists(db_));
}

TEST_F(CliLimits, DumpNamesTakenByLinksFifosOrFoldersAreRefusedBeforeTheRun) {
  const std::string d = dir_ + "/dump", outside = dir_ + "/precious";
  fs::create_directory(d);
  std::ofstream(outside) << "precious";
  const std::vector<std::string> tiny{"--heads", "1", "--seq", "4", "--head-dim", "4", "--reps", "1", "--warmup", "0"};
  const auto dumpRun = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"run", "--backend", "cpu.reference", "--dump", d};
    args.insert(args.end(), tiny.begin(), tiny.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args);
  };
  fs::create_symlink(outside, d + "/q.npy");
  expectUsageError(dumpRun({}), {"--dump: ", "q.npy is a symbolic link"});
  EXPECT_EQ(readFile(outside), "precious");
  fs::remove(d + "/q.npy");
  // A FIFO was opened and waited on for ever, deaf to SIGTERM; g.npy only in a train run.
  ASSERT_EQ(::mkfifo((d + "/g.npy").c_str(), 0600), 0);
  EXPECT_EQ(dumpRun({}).code, 0) << "g.npy is not written by a forward run";
  fs::remove_all(d);
  fs::create_directory(d);
  ASSERT_EQ(::mkfifo((d + "/g.npy").c_str(), 0600), 0);
  expectUsageError(dumpRun({"--kind", "layer", "--pass", "train"}), {"--dump: ", "g.npy is a FIFO"});
  fs::remove(d + "/g.npy");
  fs::create_directory(d + "/out.npy");
  expectUsageError(dumpRun({}), {"--dump: ", "out.npy is a folder"});
  auto runs = nlohmann::json::parse(run({"runs", "--json"}).out);
  EXPECT_EQ(runs.size(), 1u) << "a refused dump ran and saved its run";
}

TEST_F(CliLimits, ADumpThatFailsSaysWhyAndThatTheRunIsSaved) {
  // q.npy is 512 KiB, more than the 300 KB file size limit; the database's files stay below it.
  const std::string d = dir_ + "/dump";
  CliResult r = runCliUnderLimit({"run", "--backend", "cpu.reference", "--heads", "4", "--seq", "512", "--head-dim", "64",
                                  "--reps", "1", "--warmup", "0", "--dump", d, "--db", db_},
                                 RLIMIT_FSIZE, 300000);
  EXPECT_EQ(r.code, 1) << "exit " << r.code << " (153 is death by SIGXFSZ): " << r.err;
  EXPECT_NE(r.err.find("--dump: cannot write " + d + "/q.npy: File too large; the run is saved as R1"), std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("saved as         R1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("dumped to"), std::string::npos) << r.out;
  for (const auto& e : fs::directory_iterator(d)) ADD_FAILURE() << "left behind: " << e.path();
  // With few descriptors: the run, its saving and its dump all work, or the error says why.
  // Under ASan/UBSan the sanitizers' runtime needs descriptors of its own (it tests whether memory
  // is readable by writing it into a pipe; without one it reports a false "invalid vptr"), so the
  // range starts higher there.
#if defined(__SANITIZE_ADDRESS__)
  constexpr rlim_t kFewest = 16;
#else
  constexpr rlim_t kFewest = 6;
#endif
  int dumped = 0;
  for (rlim_t n = kFewest; n <= kFewest + 4; ++n) {
    const std::string dn = dir_ + "/dump" + std::to_string(n);
    r = runCliUnderLimit({"run", "--backend", "cpu.reference", "--heads", "1", "--seq", "8", "--head-dim", "8", "--reps",
                          "1", "--warmup", "0", "--dump", dn, "--db", db_},
                         RLIMIT_NOFILE, n);
    if (r.code == 0) {
      EXPECT_NE(r.out.find("dumped to"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("saved as"), std::string::npos) << r.out;
      ++dumped;
    } else {
      EXPECT_NE(r.err.find("Too many open files"), std::string::npos) << "ulimit -n " << n << ": " << r.err;
    }
  }
  EXPECT_GT(dumped, 0);
}

TEST_F(CliLimits, CtrlCDuringARunSavesItAsCancelled) {
  // Seconds of work in total, the accuracy check included; interrupted well before the end.
  const int pid = startCli({"run", "--backend", "cpu.flash", "--heads", "1", "--seq", "4096", "--seq-kv", "16384",
                            "--reps", "50", "--warmup", "0", "--db", db_});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  kill(pid, SIGINT);
  int st = 0;
  for (int i = 0; i < 600 && waitpid(pid, &st, WNOHANG) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(WIFEXITED(st)) << "attnscope did not exit after SIGINT";
  EXPECT_EQ(WEXITSTATUS(st), 1);
  auto runs = nlohmann::json::parse(run({"runs", "--json"}).out);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0]["runs"][0]["status"], "cancelled");
  EXPECT_EQ(runs[0]["ok_count"], 0);
}

TEST(CliTopLevel, HelpDescribesEveryCommandAndGuiWithoutDisplayExitsTwo) {
  CliResult top = runCli({"--help"});
  ASSERT_EQ(top.code, 0);
  for (const char* cmd : {"backends", "run", "sweep", "runs", "show", "compare", "export", "report", "gui"}) {
    const size_t at = top.out.find(std::string("\n  ") + cmd + " ");
    ASSERT_NE(at, std::string::npos) << cmd;
    const std::string line = top.out.substr(at + 3, top.out.find('\n', at + 1) - at - 3);
    EXPECT_GT(line.size(), std::string(cmd).size() + 12) << "no description for " << cmd << ": '" << line << "'";
  }
  CliResult gui = runCli({"gui"}, {"DISPLAY=", "WAYLAND_DISPLAY=", "QT_QPA_PLATFORM="});
  EXPECT_NE(gui.code, 134) << gui.err;
  EXPECT_TRUE(gui.code == 2 || gui.err.find("no GUI") != std::string::npos) << gui.code << gui.err;
  EXPECT_TRUE(gui.err.find("no display") != std::string::npos || gui.err.find("no GUI") != std::string::npos) << gui.err;
}
