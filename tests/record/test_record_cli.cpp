// `attnscope record` as a user runs it: the real binary, the real recorder in the real torch of
// ATTNSCOPE_TEST_PYTHON (exit 77, skipped, without it), programs written by the test. The classic
// report's two calls (examples/heads_cliff.py) with torch's choice, measured and predicted memory;
// the same recording explained for a V100 with torch 2.1; a sweep from a recorded call; and the
// ways a program ends: an exception, a missing script, no torch, SIGKILL, Ctrl-C, 100k calls.
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

#include "tests/support/cli_process.h"
#include "tests/support/temp_dir.h"

namespace attnscope {
namespace {

using nlohmann::json;

// Predicted and measured memory of a call agree within this (the profiler counts the 4-byte
// scalar tensors torch makes around a mask conversion, which the explainer does not model).
constexpr int64_t kToleranceBytes = 16 * 1024;

std::string testPython() {
  const char* p = std::getenv("ATTNSCOPE_TEST_PYTHON");
  if (!p || !*p) {
    std::cout << "SKIP: ATTNSCOPE_TEST_PYTHON is not set (a Python with torch; scripts/torch-venv.sh prints one)\n";
    std::exit(77);
  }
  return p;
}

class RecordCli : public ::testing::Test {
 protected:
  void SetUp() override { python_ = testPython(); }

  std::string script(const std::string& name, const std::string& text) {
    const std::string path = dir_.file(name);
    std::ofstream(path) << text;
    return path;
  }
  CliResult record(const std::vector<std::string>& program, std::vector<std::string> options = {}) {
    std::vector<std::string> args = {"record", "--db", db()};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back("--");
    args.insert(args.end(), program.begin(), program.end());
    return runCli(args, env());
  }
  json show(const std::string& id, std::vector<std::string> options = {}) {
    std::vector<std::string> args = {"show", id, "--db", db(), "--json"};
    args.insert(args.end(), options.begin(), options.end());
    const CliResult r = runCli(args, env());
    EXPECT_EQ(r.code, 0) << r.err;
    return json::parse(r.out);
  }
  std::vector<std::string> env() const { return {"ATTNSCOPE_PYTHON=" + python_}; }
  std::string db() const { return dir_.file("rec.sqlite"); }

  std::string python_;
  test::TempDir dir_;
};

// The JSON object that follows the program's own stdout.
json recordJson(const std::string& out) {
  const size_t at = out.find("\n{") != std::string::npos ? out.find("\n{") + 1 : out.find('{');
  return json::parse(out.substr(at));
}

const json* callWithHeads(const json& rec, int64_t heads) {
  for (const auto& c : rec["calls"])
    if (c["q_shape"][1] == heads) return &c;
  return nullptr;
}

TEST_F(RecordCli, TheHeadsCliffShowsWhatTorchRanAndWhatItCost) {
  const CliResult r = record({ATTNSCOPE_SOURCE_DIR "/examples/heads_cliff.py", "--seq", "512"}, {"--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("heads 8: output (1, 8, 512, 8), heads 16: output (1, 16, 512, 4)\n", 0), 0u)
      << "the program's stdout comes first, unchanged: " << r.out.substr(0, 200);
  const json rec = recordJson(r.out);
  EXPECT_EQ(rec["id"], "REC1");
  EXPECT_EQ(rec["exit_status"], 0);
  ASSERT_EQ(rec["calls"].size(), 2u);
  for (const auto& c : rec["calls"]) {
    SCOPED_TRACE(c.dump());
    EXPECT_NE(c["site"].get<std::string>().find("heads_cliff.py:"), std::string::npos);  // relative to the folder we ran in
    EXPECT_EQ(c["count"], 1);
    EXPECT_EQ(c["dtype"], "float16");
    EXPECT_EQ(c["mask_kind"], "bool");
    EXPECT_EQ(c["mask_shape"], json({1, 1, 512, 512}));
    // What torch ran is what it chose, and what the explainer predicts for the same call.
    EXPECT_EQ(c["torch_ran"], c["fused_choice"]);
    EXPECT_EQ(c["torch_ran"], c["predicted_kernel"]);
    EXPECT_EQ(c["agrees"], true);
    ASSERT_TRUE(c["measured_bytes"].is_number());
    ASSERT_TRUE(c["predicted_bytes"].is_number());
    EXPECT_NEAR(c["measured_bytes"].get<double>(), c["predicted_bytes"].get<double>(), kToleranceBytes);
    EXPECT_GT(c["time_s"].get<double>(), 0);
  }
  EXPECT_EQ((*callWithHeads(rec, 16))["module"], "HeadsCliff.heads16");

  // Recorded on a CPU, predicted for a V100 with torch 2.1: the 16-head call falls back to math.
  const json v100 = show("REC1", {"--gpu", "V100", "--torch", "2.1"});
  ASSERT_TRUE(callWithHeads(v100, 16) && callWithHeads(v100, 8));
  EXPECT_EQ((*callWithHeads(v100, 16))["target_kernel"], "math");
  EXPECT_NE((*callWithHeads(v100, 16))["change"].get<std::string>().find(" -> math: +"), std::string::npos);
  EXPECT_NE((*callWithHeads(v100, 8))["target_kernel"], "math");
  // ... and that is what `explain` says for the same workload.
  const json spec = (*callWithHeads(v100, 16))["spec"];
  const CliResult ex = runCli({"explain", "--torch", "2.1", "--gpu", "V100", "--heads", "16", "--head-dim", "4", "--seq", "512",
                               "--dtype", "fp16", "--mask", "dense", "--json"});
  ASSERT_EQ(ex.code, 0) << ex.err;
  EXPECT_EQ(json::parse(ex.out)["chosen"], "math");
  EXPECT_EQ(spec["heads"], 16);
  EXPECT_EQ(spec["mask"], "dense");

  // The text report, sorted by memory, on stderr after the program's output.
  const CliResult text = runCli({"show", "REC1", "--db", db(), "--gpu", "V100", "--torch", "2.1"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("flash -> math: +"), std::string::npos) << text.out;
  const CliResult runs = runCli({"runs", "--db", db()});
  EXPECT_NE(runs.out.find("REC1"), std::string::npos) << runs.out;

  // From the call to a sweep: its shapes, dtype and mask, with heads swept.
  const CliResult sw = runCli({"sweep", "--db", db(), "--from", "REC1:" + std::to_string((*callWithHeads(rec, 16))["row"].get<int>()),
                               "--heads", "8,16", "--backends", "cpu.flash", "--json"},
                              env());
  ASSERT_EQ(sw.code, 0) << sw.err;
  const json swept = json::parse(sw.out);
  ASSERT_EQ(swept["runs"].size(), 2u) << sw.out;
  for (const auto& run : swept["runs"]) {
    EXPECT_EQ(run["spec"]["seq"], 512);
    EXPECT_EQ(run["spec"]["head_dim"], 4);
    EXPECT_EQ(run["spec"]["dtype"], "fp16");
    EXPECT_EQ(run["spec"]["mask"], "dense");
  }
  const CliResult bad = runCli({"sweep", "--db", db(), "--from", "REC1:9", "--backends", "cpu.flash"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--from"), std::string::npos) << bad.err;
}

TEST_F(RecordCli, AProgramThatRaisesKeepsItsCallsAndItsExit) {
  const std::string s = script("fails.py", R"(import sys, torch
import torch.nn.functional as F
q = torch.randn(1, 2, 16, 8)
F.scaled_dot_product_attention(q, q, q)
print("made a call", flush=True)
print("about to fail", file=sys.stderr)
raise ValueError("the model broke")
)");
  const CliResult r = record({s});
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.out, "made a call\n");
  EXPECT_NE(r.err.find("ValueError: the model broke"), std::string::npos) << r.err;
  const json rec = show("REC1");
  EXPECT_EQ(rec["exit_status"], 1);
  EXPECT_EQ(rec["calls"].size(), 1u);
  EXPECT_NE(rec["stderr_tail"].get<std::string>().find("ValueError: the model broke"), std::string::npos);
  EXPECT_NE(rec["stderr_tail"].get<std::string>().find("about to fail"), std::string::npos);
}

TEST_F(RecordCli, BadProgramsAreRefusedWithExit2) {
  CliResult r = record({dir_.file("missing.py")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.py"), std::string::npos) << r.err;
  r = runCli({"record", "--db", db()}, env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--"), std::string::npos) << r.err;
  r = runCli({"record", "--db", db(), "--samples", "0", "--", script("a.py", "")}, env());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--samples"), std::string::npos) << r.err;
  // A Python without torch: said plainly, exit 2, nothing saved.
  r = runCli({"record", "--db", db(), "--python", ATTNSCOPE_TEST_SYSTEM_PYTHON, "--", script("b.py", "print(1)\n")});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("cannot record"), std::string::npos) << r.err;
  const CliResult runs = runCli({"runs", "--db", db(), "--json"});
  EXPECT_EQ(runs.out.find("recording"), std::string::npos) << runs.out;
  // A program that makes no attention call is a recording that says so.
  r = record({script("none.py", "import torch\nprint(torch.ones(2).sum().item())\n")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no attention calls seen"), std::string::npos) << r.err;
}

TEST_F(RecordCli, AKilledProgramKeepsWhatWasRecorded) {
  const std::string s = script("killed.py", R"(import os, signal, time, torch
import torch.nn.functional as F
q = torch.randn(1, 2, 16, 8)
for i in range(3):
    F.scaled_dot_product_attention(q, q, q)
time.sleep(0.7)
F.scaled_dot_product_attention(q, q, q, is_causal=True)
time.sleep(0.7)
os.kill(os.getpid(), signal.SIGKILL)
)");
  const CliResult r = record({s});
  EXPECT_EQ(r.code, 128 + SIGKILL) << r.err;
  const json rec = show("REC1");
  EXPECT_EQ(rec["exit_signal"], SIGKILL);
  EXPECT_EQ(rec["complete"], false);
  ASSERT_GE(rec["calls"].size(), 1u) << "the recorder's periodic write is kept";
  EXPECT_EQ(rec["calls"][0]["count"], 3);
}

TEST_F(RecordCli, CtrlCReachesTheProgramAndTheRecordingIsKept) {
  const std::string ready = dir_.file("ready");
  const std::string s = script("slow.py", R"(import sys, time, torch
import torch.nn.functional as F
q = torch.randn(1, 2, 16, 8)
F.scaled_dot_product_attention(q, q, q)
open(sys.argv[1], "w").close()
time.sleep(60)
)");
  std::vector<std::string> env_list = env();
  const int pid = startCli({"record", "--db", db(), "--", s, ready}, env_list);
  for (int i = 0; i < 600 && !std::filesystem::exists(ready); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_TRUE(std::filesystem::exists(ready));
  ::kill(pid, SIGINT);  // sent to attnscope alone, as `kill -INT` or a batch system would
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << "the program died of its KeyboardInterrupt, as Python does";
  const json rec = show("REC1");
  EXPECT_EQ(rec["interrupted"], true);
  EXPECT_EQ(rec["calls"].size(), 1u);
}

TEST_F(RecordCli, AHundredThousandCallsStayOneBoundedRow) {
  const std::string s = script("many.py", R"(import torch
import torch.nn.functional as F
q = torch.randn(1, 1, 4, 8)
for i in range(100000):
    F.scaled_dot_product_attention(q, q, q)
)");
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult r = record({s}, {"--json"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.code, 0) << r.err;
  const json rec = recordJson(r.out);
  ASSERT_EQ(rec["calls"].size(), 1u);
  EXPECT_EQ(rec["calls"][0]["count"], 100000);
  EXPECT_EQ(rec["calls_seen"], 100000);
  std::printf("100000 calls recorded in %.1f s, recorder overhead %.2f s (%.1f us a call)\n", seconds,
              rec["overhead_s"].get<double>(), rec["overhead_s"].get<double>() / 1e5 * 1e6);
  struct stat st {};
  ASSERT_EQ(::stat(db().c_str(), &st), 0);
  EXPECT_LT(st.st_size, 1 << 20) << "the database holds one row, not 100000";
}

}  // namespace
}  // namespace attnscope
