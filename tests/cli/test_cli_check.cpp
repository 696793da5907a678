// `--check` through the real binary: a planted huge q row fails the default check, a sampled
// or unchecked run says so wherever it says ok (run, sweep, runs, show, --json, CSV), a sweep
// stores its mode, and a bad mode is refused naming the allowed ones.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"

namespace {

class CliCheck : public CliFixture {
 protected:
  CliCheck() : CliFixture("check") {}
};

// Sets every element of row `row` of a float32 .npy file (v1 header) to `value`.
void plantRow(const std::string& path, int64_t row, int64_t D, float value) {
  std::string bytes = readFile(path);
  ASSERT_EQ(bytes.compare(0, 6, "\x93NUMPY"), 0);
  const size_t header = 10 + static_cast<unsigned char>(bytes[8]) + 256 * static_cast<unsigned char>(bytes[9]);
  for (int64_t d = 0; d < D; ++d) std::memcpy(&bytes[header + static_cast<size_t>((row * D + d) * 4)], &value, 4);
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_F(CliCheck, APlantedHugeQRowFailsTheDefaultCheck) {
  const std::string inputs = dir_ + "/in";
  const std::vector<std::string> spec = {"--backend", "cpu.flash", "--heads", "8", "--seq", "1024", "--head-dim", "32"};
  std::vector<std::string> dump = spec;
  dump.insert(dump.begin(), "run");
  for (const char* a : {"--no-db", "--dump"}) dump.emplace_back(a);
  dump.push_back(inputs);
  ASSERT_EQ(runCli(dump).code, 0);
  plantRow(inputs + "/q.npy", 5000, 32, 3e38f);
  std::vector<std::string> again = {"run"};
  again.insert(again.end(), spec.begin(), spec.end());
  for (const char* a : {"--inputs", inputs.c_str(), "--json"}) again.emplace_back(a);
  const CliResult r = run(again);
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["status"], "wrong");
  EXPECT_NE(j["message"].get<std::string>().find("output row 5000"), std::string::npos) << j["message"];
}

TEST_F(CliCheck, CoverageIsSaidWhereverOkIs) {
  const std::vector<std::string> spec = {"--backend", "cpu.flash", "--heads", "8", "--seq", "1024", "--head-dim", "16",
                                         "--reps", "1", "--warmup", "0"};
  auto runWith = [&](const char* mode, bool json) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), spec.begin(), spec.end());
    for (const char* a : {"--check", mode}) args.emplace_back(a);
    if (json) args.emplace_back("--json");
    return run(args);
  };
  const CliResult sampled = runWith("sampled", false);
  ASSERT_EQ(sampled.code, 0) << sampled.err;
  EXPECT_NE(sampled.out.find("status            ok, checked "), std::string::npos) << sampled.out;
  const auto off = nlohmann::json::parse(runWith("off", true).out);
  EXPECT_EQ(off["status"], "ok");
  EXPECT_EQ(off["status_text"], "ok, not checked");
  EXPECT_EQ(off["accuracy"]["checked"], false);
  EXPECT_EQ(off["accuracy"]["checked_fraction"], 0.0);
  const auto full = nlohmann::json::parse(runWith("full", true).out);
  EXPECT_EQ(full["status_text"], "ok");
  EXPECT_EQ(full["accuracy"]["checked_fraction"], 1.0);

  const CliResult shown = run({"show", "R1", "--json"});
  const double fraction = nlohmann::json::parse(shown.out)["accuracy"]["checked_fraction"];
  EXPECT_GT(fraction, 0.0);
  EXPECT_LT(fraction, 0.5);
  EXPECT_NE(run({"show", "R2"}).out.find("ok, not checked"), std::string::npos);
  const CliResult runs = run({"runs"});
  EXPECT_NE(runs.out.find("1 (1 not every row checked)"), std::string::npos) << runs.out;
  const std::string csv = dir_ + "/r.csv";
  ASSERT_EQ(run({"export", "S1", "--format", "csv", "--out", csv}).code, 0);
  const std::string text = readFile(csv);
  EXPECT_NE(text.find(",checked_fraction,"), std::string::npos) << text.substr(0, 400);
}

TEST_F(CliCheck, ASweepStoresItsModeAndBadModesAreRefused) {
  const CliResult s = run({"sweep", "--backends", "cpu.flash", "--heads", "1,2", "--seq", "16", "--head-dim", "8",
                           "--reps", "1", "--check", "off", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  const auto sj = nlohmann::json::parse(s.out);  // kept: a range over a temporary's member dangles
  for (const auto& r : sj["runs"]) EXPECT_EQ(r["status_text"], "ok, not checked");
  const CliResult show = run({"show", "S1"});
  EXPECT_NE(show.out.find("check       off"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("ok, not checked"), std::string::npos) << show.out;
  const auto sweeps = nlohmann::json::parse(run({"runs", "--json"}).out);
  EXPECT_EQ(sweeps[0]["ok_count"], 2);
  EXPECT_EQ(sweeps[0]["ok_every_row_count"], 0);
  EXPECT_EQ(sweeps[0]["runs"][0]["checked_fraction"], 0.0);
  for (const auto& args : {std::vector<std::string>{"run", "--backend", "cpu.flash", "--check", "most"},
                           std::vector<std::string>{"sweep", "--backends", "cpu.flash", "--check", "most"}})
    expectUsageError(run(args), {"--check: 'most' is not a check mode (allowed: auto, full, sampled, off)"});
}

}  // namespace
