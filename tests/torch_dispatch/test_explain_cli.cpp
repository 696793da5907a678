// `attnscope explain` driven as a user would: the 8 -> 16 head cliff on sm70 and sm80 (JSON), the text
// report, exit codes and messages for bad input, and the installed-torch lookup.
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tests/support/cli_process.h"

namespace {

nlohmann::json explainJson(std::vector<std::string> args) {
  args.insert(args.begin(), "explain");
  args.push_back("--json");
  CliResult r = runCli(args);
  EXPECT_EQ(r.code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

void expectUsageError(const std::vector<std::string>& args, const std::vector<std::string>& words) {
  CliResult r = runCli(args);
  EXPECT_EQ(r.code, 2) << r.err;
  for (const auto& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << "missing '" << w << "' in: " << r.err;
}

}  // namespace

TEST(ExplainCli, ReproducesTheHeadsCliffOnSm70AndSm80) {
  for (const char* gpu : {"sm70", "sm80"}) {
    const std::vector<std::string> base = {"--width", "64", "--seq", "10000", "--dtype", "fp16", "--mask", "dense", "--gpu", gpu};
    auto h8 = base, h16 = base;
    h8.insert(h8.end(), {"--heads", "8"});
    h16.insert(h16.end(), {"--heads", "16"});
    const auto a = explainJson(h8), b = explainJson(h16);
    EXPECT_EQ(a["chosen"], "efficient") << gpu;
    EXPECT_EQ(b["chosen"], "math") << gpu;
    const int64_t pa = a["memory"]["peak_bytes"], pb = b["memory"]["peak_bytes"];
    EXPECT_GT(pb, 10 * pa) << gpu;
    // Why: efficient is rejected by the alignment rule at head_dim 4.
    bool found = false;
    for (const auto& v : b["verdicts"])
      if (v["kernel"] == "efficient") {
        EXPECT_EQ(v["rejected_by"]["rule_id"], "efficient.head_dim_alignment");
        found = true;
      }
    EXPECT_TRUE(found);
    // The math buffers are named, the [B,H,L,S] scores among them.
    bool scores = false;
    for (const auto& buf : b["memory"]["plan"]["buffers"]) scores |= buf["name"].get<std::string>().starts_with("scores fp32 [B,H,L,S]");
    EXPECT_TRUE(scores);
    // A cheaper change is offered: padding head_dim to 8 moves back to efficient.
    bool pad = false;
    for (const auto& s : b["suggestions"]) pad |= s["change"].get<std::string>().starts_with("pad head_dim 4 -> 8") && s["kernel"] == "efficient";
    EXPECT_TRUE(pad);
  }
}

TEST(ExplainCli, TextReportNamesRulesBuffersAndChoice) {
  CliResult r = runCli({"explain", "--width", "64", "--heads", "16", "--seq", "4096", "--dtype", "fp16", "--mask", "dense", "--gpu", "A100", "--torch", "2.5.1"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* w : {"torch 2.5.1", "sm80 (A100)", "order:    flash, efficient, math, cudnn", "rejected by efficient.head_dim_alignment",
                        "Mem efficient attention requires last dimension of inputs to be divisible by 8", "torch would pick: math",
                        "_safe_softmax where() output fp32", "cuBLAS workspace", "cheaper with:"})
    EXPECT_NE(r.out.find(w), std::string::npos) << "missing '" << w << "' in:\n" << r.out;
}

TEST(ExplainCli, CpuTargetAndForcedKernel) {
  const auto j = explainJson({"--gpu", "cpu", "--torch", "2.1", "--mask", "dense", "--threads", "4"});
  EXPECT_EQ(j["chosen"], "math");
  EXPECT_EQ(j["target"]["device"], "cpu");
  const auto f = explainJson({"--gpu", "cpu", "--kernel", "efficient"});
  EXPECT_TRUE(f["chosen"].is_null());
  EXPECT_EQ(f["error"], "No available kernel. Aborting execution.");
}

TEST(ExplainCli, BadInputExitsTwoNamingTheAllowedValues) {
  expectUsageError({"explain", "--torch", "1.13"}, {"--torch", "1.13", "2.0 to 2.15", "installed"});
  expectUsageError({"explain", "--gpu", "sm99"}, {"--gpu", "sm99", "sm50", "sm121", "V100", "H200", "detected", "cpu"});
  expectUsageError({"explain", "--cudnn", "nine"}, {"--cudnn", "nine", "9.10.2"});
  expectUsageError({"explain", "--kernel", "fast"}, {"--kernel", "flash, efficient, cudnn, math"});
  expectUsageError({"explain", "--heads", "0"}, {"heads", ">= 1"});
  expectUsageError({"explain", "--frobnicate"}, {"frobnicate"});
  // What only looks like a version or a GPU (the value shown escaped, the accepted forms named).
  for (const char* t : {"2.5a", "2.5\n", "2.05", "2.15.99"})
    expectUsageError({"explain", "--torch", t}, {"--torch: unknown version", "2.Y or 2.Y.Z", "2.5.1+cu121"});
  expectUsageError({"explain", "--torch", "2.5\n"}, {"'2.5\\x0a'"});
  for (const char* g : {" A100", "sm+80", "sm-80"}) expectUsageError({"explain", "--gpu", g}, {"--gpu: unknown GPU", "sm80"});
  expectUsageError({"explain", "--cudnn", "9.10.2.3"}, {"--cudnn: unknown version '9.10.2.3'", "X.Y.Z", "91002", "give 9.10.2"});
  // Real ones still are.
  EXPECT_EQ(explainJson({"--torch", "2.5.1+cu121", "--gpu", "NVIDIA A100-SXM4-80GB", "--cudnn", "91002"})["target"]["cudnn"],
            "9.10.2");
}

TEST(ExplainCli, InstalledTorchLookup) {
  CliResult missing = runCli({"explain", "--torch", "installed", "--python", "/nonexistent/python3"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("--torch installed: /nonexistent/python3 (from --python): no such executable file"),
            std::string::npos)
      << missing.err;
  if (!std::getenv("ATTNSCOPE_PYTHON")) {
    CliResult env = runCli({"explain", "--torch", "installed"}, {"ATTNSCOPE_PYTHON=/nonexistent/envpython"});
    EXPECT_EQ(env.code, 1);
    EXPECT_NE(env.err.find("/nonexistent/envpython"), std::string::npos) << env.err;
  }
  const char* py = std::getenv("ATTNSCOPE_TEST_PYTHON");
  if (!py || !*py) {
    std::cout << "note: ATTNSCOPE_TEST_PYTHON unset; the real-torch lookup is not exercised\n";
    return;
  }
  const auto j = explainJson({"--torch", "installed", "--gpu", "cpu", "--python", py});
  EXPECT_EQ(j["target"]["device"], "cpu");
  EXPECT_TRUE(j["target"]["torch"].get<std::string>().starts_with("2."));
  // Without a CUDA device, "detected" says so (exit 1); with one, it explains for it.
  CliResult det = runCli({"explain", "--torch", "installed", "--python", py});
  if (det.code != 0) {
    EXPECT_EQ(det.code, 1);
    EXPECT_NE(det.err.find("sees no CUDA device"), std::string::npos) << det.err;
  }
}

// --torch V1,V2 --gpu G1,G2: one row per (GPU, release), each exactly the single-target explain
// (kernel, peak, verdicts, order), changes marked against the release before on the same GPU.
TEST(ExplainCli, AcrossReleasesAndGpusEachRowIsTheSingleExplain) {
  const std::vector<std::string> spec = {"--width", "64", "--heads", "16", "--seq", "1024", "--dtype", "fp16", "--mask", "dense"};
  auto args = spec;
  args.insert(args.begin(), "explain");
  args.insert(args.end(), {"--torch", "2.1,2.5,2.15", "--gpu", "V100,H100", "--json"});
  CliResult r = runCli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["targets"].size(), 6u);
  size_t i = 0;
  std::string previous_kernel;
  int64_t previous_peak = -1;
  for (const char* gpu : {"V100", "H100"})
    for (const char* torch : {"2.1", "2.5", "2.15"}) {
      auto one = spec;
      one.insert(one.begin(), "explain");
      one.insert(one.end(), {"--torch", torch, "--gpu", gpu, "--json"});
      CliResult single = runCli(one);
      ASSERT_EQ(single.code, 0) << single.err;
      auto expected = nlohmann::json::parse(single.out);
      auto got = j["targets"][i];
      SCOPED_TRACE(std::string(gpu) + " " + torch);
      for (const char* key : {"chosen", "verdicts", "priority_order", "target", "memory", "call", "suggestions"})
        EXPECT_EQ(got[key], expected[key]) << key;
      const bool first = i % 3 == 0;
      const int64_t peak = got["memory"]["peak_bytes"].get<int64_t>();
      const bool changed = !first && (got["chosen"] != previous_kernel || peak != previous_peak);
      EXPECT_EQ(got["changed"], changed);
      previous_kernel = got["chosen"].is_string() ? got["chosen"].get<std::string>() : "";
      previous_peak = peak;
      ++i;
    }
  args.pop_back();
  CliResult text = runCli(args);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("*   2.5.0  sm70 (V100)  math"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("efficient.head_dim_alignment = head_dim a multiple of the GEMM alignment"), std::string::npos) << text.out;
  CliResult forced = runCli({"explain", "--torch", "2.1,2.5", "--kernel", "math"});
  EXPECT_EQ(forced.code, 2);
  EXPECT_NE(forced.err.find("--kernel explains one target"), std::string::npos) << forced.err;
}
