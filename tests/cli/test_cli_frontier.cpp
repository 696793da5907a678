// The real binary's `frontier`: the classic report's table (width 64, fp16, a bool mask, torch 2.1
// on a V100) with the kernel change and the cheapest fix, the JSON, and bad input named (exit 2).
#include <gtest/gtest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "tests/cli/cli_fixture.h"

namespace {

const std::vector<std::string> kClassic = {"frontier", "--width", "64", "--dtype", "fp16", "--mask", "dense",
                                           "--budget", "V100", "--torch", "2.1", "--gpu", "V100"};

TEST(CliFrontier, TheClassicReportShowsTheCliffAndItsFix) {
  CliResult r = runCli(kClassic);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("longest seq whose predicted peak fits V100 16.0 GiB less 840 MiB reserve = 15.2 GiB, per heads"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch 2.1 V100 (picks)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("15,589 math"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("29,272 efficient (x16: 63,776)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("heads 16: math up to seq 15,589 (the kernel changes here); with pad head_dim 4 -> 8"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("torch 2.1 V100 cudnn at heads 1,2,4,8,16,32,64: cannot run"), std::string::npos) << r.out;
}

TEST(CliFrontier, JsonHasEveryLineAndPoint) {
  auto args = kClassic;
  args.insert(args.end(), {"--heads", "8,16", "--backends", "cpu.flash,torch,torch.math", "--json"});
  CliResult r = runCli(args);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["vary"], "seq");
  EXPECT_EQ(j["gpu"]["name"], "V100");
  ASSERT_EQ(j["lines"].size(), 3u);
  EXPECT_EQ(j["lines"][0]["name"], "cpu.flash");
  EXPECT_EQ(j["lines"][1]["name"], "torch 2.1 V100 (picks)");
  const auto& pick16 = j["lines"][1]["points"][1];
  EXPECT_EQ(pick16["heads"], 16);
  EXPECT_EQ(pick16["max"], 15589);
  EXPECT_EQ(pick16["kernel_at_max"], "math");
  EXPECT_GT(pick16["next_peak"].get<int64_t>(), j["budget"].get<int64_t>());
  EXPECT_NE(pick16["deciding"].get<std::string>().find("fp16 [B,H,L,S]"), std::string::npos) << pick16;
  ASSERT_FALSE(j["changes"].empty());
  EXPECT_EQ(j["changes"][0]["with"]["kernel"], "efficient");
}

TEST(CliFrontier, BatchAndABudgetInBytes) {
  CliResult r = runCli({"frontier", "--vary", "batch", "--heads", "4", "--seq", "512", "--budget", "64MiB", "--backends",
                        "cpu.reference,cpu.flash"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("largest batch whose predicted peak fits 64.0 MiB, per heads"), std::string::npos) << r.out;
}

// --verify on the CPU backends: at each budget the frontier point runs with the allocator limited
// to the budget and the next one is refused; both saved as one sweep.
class CliFrontierVerify : public CliFixture {
 protected:
  CliFrontierVerify() : CliFixture("frontier") {}
};

TEST_F(CliFrontierVerify, TheFrontierPointRunsAndTheNextIsRefused) {
  for (const char* budget : {"2MiB", "5MiB"}) {
    SCOPED_TRACE(budget);
    CliResult r = run({"frontier", "--heads", "1,3", "--head-dim", "16", "--budget", budget, "--backends",
                       "cpu.reference,cpu.flash", "--verify", "--json"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["verify"].size(), 8u) << "2 backends x 2 head counts x (frontier, next)";
    for (const auto& c : j["verify"]) {
      EXPECT_TRUE(c["held"].get<bool>()) << c;
      EXPECT_EQ(c["status"], c["at_frontier"].get<bool>() ? "ok" : "oom") << c;
      if (c["at_frontier"].get<bool>()) {
        EXPECT_LE(c["measured_peak"].get<int64_t>(), j["budget"].get<int64_t>());
        EXPECT_EQ(c["measured_peak"], c["predicted_peak"]) << "plan == measured for our backends";
      } else {
        EXPECT_GT(c["predicted_peak"].get<int64_t>(), j["budget"].get<int64_t>());
      }
    }
  }
  attnscope::Store store(db_, attnscope::StoreMode::read);
  ASSERT_EQ(store.sweeps().size(), 2u);
  EXPECT_NE(store.sweeps()[0].name.find("frontier --verify"), std::string::npos);
  EXPECT_EQ(store.sweeps()[0].run_count, 8);
  EXPECT_EQ(store.sweeps()[0].ok_count, 4);
  // torch's lines on a CUDA target are predictions only: nothing here runs them.
  CliResult none = run({"frontier", "--budget", "1GiB", "--backends", "torch", "--gpu", "V100", "--verify"});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("--verify: none of the lines runs on this machine"), std::string::npos) << none.err;
}

// torch's CPU lines against the real installed torch (ATTNSCOPE_TEST_PYTHON, as CI sets): its
// measured peak is within the budget at the frontier and past it one step further.
TEST_F(CliFrontierVerify, TorchCpuLinesAreMeasuredAgainstTheBudget) {
  const char* py = std::getenv("ATTNSCOPE_TEST_PYTHON");
  if (!py || !*py) GTEST_SKIP() << "ATTNSCOPE_TEST_PYTHON unset: no real torch to verify against";
  CliResult r = runCli({"frontier", "--heads", "2", "--head-dim", "16", "--budget", "3MiB", "--backends", "torch,torch.math",
                        "--gpu", "cpu", "--verify", "--json", "--db", db_},
                       {std::string("ATTNSCOPE_PYTHON=") + py});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["verify"].size(), 4u) << r.out;
  for (const auto& c : j["verify"]) {
    EXPECT_TRUE(c["held"].get<bool>()) << c;
    EXPECT_FALSE(c["enforced"].get<bool>()) << c;
    EXPECT_EQ(c["status"], "ok") << c;
    const int64_t measured = c["measured_peak"].get<int64_t>(), budget = j["budget"].get<int64_t>();
    if (c["at_frontier"].get<bool>()) EXPECT_LE(measured, budget) << c;
    else EXPECT_GT(measured, budget) << c;
  }
  EXPECT_EQ(j["verify"][0]["backend"], "torch.cpu.auto");
  EXPECT_EQ(j["verify"][2]["backend"], "torch.cpu.math");
}

TEST(CliFrontier, BadInputIsNamed) {
  auto expect2 = [](std::vector<std::string> args, const std::string& fragment) {
    CliResult r = runCli(args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  };
  expect2({"frontier"}, "--budget is required");
  expect2({"frontier", "--budget", "K80"}, "allowed: P100 16 GiB");
  expect2({"frontier", "--budget", "V100", "--vary", "width"}, "--vary: unknown axis 'width' (allowed: seq, batch, heads)");
  expect2({"frontier", "--budget", "V100", "--seq", "1024"}, "--seq: it is the axis searched");
  expect2({"frontier", "--budget", "V100", "--heads", "0,8"}, "--heads: '0' is not a whole number from 1 to 16384");
  expect2({"frontier", "--budget", "V100", "--backends", "cpu.fast"}, "--backends: unknown line 'cpu.fast'");
  expect2({"frontier", "--budget", "V100", "--torch", "1.13"}, "--torch: unknown version '1.13'");
  expect2({"frontier", "--budget", "1GiB", "--reserve", "1MiB"}, "--reserve applies to --budget GPU only");
  expect2({"frontier", "--budget", "V100", "--vary", "heads", "--over", "heads"}, "must differ");
  expect2({"frontier", "--budget", "V100", "--dtype", "fp64"}, "dtype");
}

}  // namespace
