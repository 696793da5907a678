// The command line as a user drives it: every test runs the real binary on real files.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_fixture.h"
#include "core/spec/dtype.h"
#include "core/inputs/npy.h"
#include "core/check/reference.h"
#include "core/result/environment.h"
#include "core/store/store.h"

namespace fs = std::filesystem;

namespace {

class Cli : public CliFixture {
 protected:
  Cli() : CliFixture("clitest") {}
};

const std::vector<std::string> kSmall{"--heads", "2", "--seq", "33", "--head-dim", "8"};

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(CliHelp, EveryCommandHasHelp) {
  CliResult top = runCli({"--help"});
  EXPECT_EQ(top.code, 0);
  for (const char* cmd : {"backends", "run", "sweep", "runs", "show", "compare", "export", "report", "gui"}) {
    EXPECT_NE(top.out.find(cmd), std::string::npos) << cmd;
    CliResult r = runCli({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd;
    EXPECT_NE(r.out.find(std::string("usage: attnscope ") + cmd), std::string::npos) << r.out;
  }
  CliResult unknown = runCli({"frobnicate"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown command 'frobnicate'"), std::string::npos);
}

// GitHub's anchor for a Markdown heading: lower case, spaces to '-', punctuation but '-' and '_'
// dropped.
std::string anchorOf(const std::string& heading) {
  std::string out;
  for (unsigned char c : heading) {
    if (std::isalnum(c) || c == '-' || c == '_') out += static_cast<char>(std::tolower(c));
    else if (c == ' ') out += '-';
  }
  return out;
}

TEST(CliHelp, EveryHelpEndsWithItsSectionOfTheGuide) {
  std::set<std::string> anchors;
  std::ifstream guide(std::string(ATTNSCOPE_SOURCE_DIR) + "/docs/USER_GUIDE.md");
  ASSERT_TRUE(guide) << "docs/USER_GUIDE.md";
  for (std::string line; std::getline(guide, line);) {
    const size_t hashes = line.find_first_not_of('#');
    if (hashes > 0 && hashes != std::string::npos && line[hashes] == ' ') {
      anchors.insert(anchorOf(line.substr(hashes + 1)));
    }
  }
  ASSERT_TRUE(anchors.count("the-command-line")) << "the guide's headings were not read";
  auto lastLine = [](const std::string& text) {
    std::string t = text.substr(0, text.find_last_not_of('\n') + 1);
    return t.substr(t.rfind('\n') + 1);
  };
  EXPECT_EQ(lastLine(runCli({"--help"}).out), "Guide: docs/USER_GUIDE.md");
  const std::map<std::string, std::string> expected{
      {"gui", "the-desktop-application"},
      {"backends", "backends"},
      {"run", "the-command-line"},
      {"sweep", "the-command-line"},
      {"runs", "the-command-line"},
      {"show", "the-command-line"},
      {"compare", "the-command-line"},
      {"export", "the-command-line"},
      {"report", "the-command-line"},
      {"check", "the-command-line"},
      {"explain", "why-did-torch-pick-that-kernel-attnscope-explain"},
      {"frontier", "how-far-can-i-go-on-this-card-attnscope-frontier"},
      {"record", "your-own-program-attnscope-record"},
      {"merge", "sweeps-on-a-cluster"},
      {"slurm", "sweeps-on-a-cluster"},
  };
  // Every command the top-level help lists has an entry here.
  const std::string top = runCli({"--help"}).out;
  size_t listed = 0;
  for (size_t at = top.find("\n  "); at != std::string::npos; at = top.find("\n  ", at + 1)) {
    const std::string name = top.substr(at + 3, top.find(' ', at + 3) - at - 3);
    if (!name.empty() && std::islower(static_cast<unsigned char>(name[0]))) {
      EXPECT_TRUE(expected.count(name)) << "attnscope --help lists '" << name << "', which has no guide section here";
      ++listed;
    }
  }
  EXPECT_EQ(listed, expected.size()) << top;
  for (const auto& [command, anchor] : expected) {
    const CliResult r = runCli({command, "--help"});
    EXPECT_EQ(r.code, 0) << command;
    EXPECT_EQ(lastLine(r.out), "Guide: docs/USER_GUIDE.md#" + anchor) << command;
    EXPECT_TRUE(anchors.count(anchor)) << command << ": #" << anchor << " is not a heading of docs/USER_GUIDE.md";
  }
}

TEST_F(Cli, BadInputExitsTwoNamingFieldAndAllowedValues) {
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "0"}), {"heads", ">= 1", "got 0"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--dtype", "fp8"}), {"dtype", "fp8", "fp32, fp16, bf16"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--mask", "window:0"}), {"mask", "width must be >= 1"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--mask", "diagonal"}), {"mask", "none, causal, window:W"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "8", "--kv-heads", "3"}), {"kv_heads", "divide"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "8", "--width", "100"}), {"width", "divisible"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--mask", "dense:1.5"}), {"(0, 1]"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--mask", "block:4", "--seq", "8", "--seq-kv", "16"}), {"seq == seq_kv"});
  expectUsageError(run({"run", "--backend", "nope"}), {"unknown backend 'nope'", "cpu.reference", "cpu.flash"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--colour", "red"}), {"unknown option '--colour'"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--heads", "8,16"}), {"lists are for 'attnscope sweep'"});
  expectUsageError(run({"run"}), {"--backend is required"});
  expectUsageError(run({"sweep", "--backends", "cpu.flash", "--width", "64", "--heads", "8,128"}), {"width", "128"});
  expectUsageError(run({"sweep", "--backends", "cpu.flash", "--budget", "lots"}), {"--budget", "8GiB"});
  expectUsageError(run({"show", "X7"}), {"not an id"});
  expectUsageError(run({"export", "S1", "--format", "xls", "--out", dir_ + "/x"}), {"--format", "csv, json, trace"});
}

TEST_F(Cli, BackendsJsonListsCpuBackendsAndReasons) {
  CliResult r = runCli({"backends", "--json", "--heads", "4", "--seq", "128"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> ids;
  for (const auto& b : j["backends"]) {
    ids.insert(b["id"]);
    if (!b["available"].get<bool>()) {
      EXPECT_FALSE(b["unavailable_reason"].get<std::string>().empty()) << b.dump();
      EXPECT_FALSE(b["supported"].get<bool>());
    }
    if (b["supported"].get<bool>()) {
      EXPECT_GT(b["predicted_peak"].get<int64_t>(), 0);
    }
    // A CUDA backend's plan needs no device: without one it still says what the spec would take.
    const std::string id = b["id"];
    if (id.starts_with("cuda.") && !b["available"].get<bool>()) {
      EXPECT_EQ(b["reasons"].size(), 1u) << b.dump();
      EXPECT_GT(b["predicted_peak"].get<int64_t>(), 0) << b.dump();
    }
  }
  EXPECT_TRUE(ids.count("cpu.reference"));
  EXPECT_TRUE(ids.count("cpu.flash"));
  // Where the spec itself is refused, no figure is shown, device or not.
  r = runCli({"backends", "--json", "--kind", "layer", "--heads", "4", "--seq", "128"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json layer = nlohmann::json::parse(r.out);  // kept: the loop reads inside it
  for (const auto& b : layer["backends"]) {
    if (std::string(b["id"]).starts_with("cuda.")) {
      EXPECT_EQ(b["predicted_peak"].get<int64_t>(), -1) << b.dump();
    }
  }
}

TEST_F(Cli, RunJsonReportsOkWithMeasuredEqualToPlan) {
  for (const char* backend : {"cpu.reference", "cpu.flash"}) {
    CliResult r = run(cat({"run", "--backend", backend, "--json", "--mask", "dense:0.5", "--mask-layout", "per_head"}, kSmall));
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["status"], "ok");
    EXPECT_EQ(j["memory"]["measured_peak"], j["memory"]["predicted_peak"]);
    EXPECT_TRUE(j["accuracy"]["passed"].get<bool>());
    EXPECT_GT(j["id"].get<int64_t>(), 0);
  }
}

TEST_F(Cli, DumpAndInputsRoundTrip) {
  for (const char* dtype : {"fp32", "fp16", "bf16"}) {
    const std::string d1 = dir_ + "/dump1-" + dtype, d2 = dir_ + "/dump2-" + dtype;
    auto spec = cat(kSmall, {"--dtype", dtype, "--mask", "dense:0.7", "--seq-kv", "40"});
    CliResult a = run(cat({"run", "--backend", "cpu.flash", "--dump", d1}, spec));
    ASSERT_EQ(a.code, 0) << a.err;
    for (const char* f : {"q.npy", "k.npy", "v.npy", "out.npy", "mask.npy"}) EXPECT_TRUE(fs::exists(d1 + "/" + f)) << f;
    attnscope::NpyArray q = attnscope::readNpy(d1 + "/q.npy");
    EXPECT_EQ(q.shape, (std::vector<int64_t>{1, 2, 33, 8}));
    EXPECT_EQ(q.descr, std::string(dtype) == "fp16" ? "<f2" : "<f4");
    attnscope::NpyArray m = attnscope::readNpy(d1 + "/mask.npy");
    EXPECT_EQ(m.descr, "|b1");
    EXPECT_EQ(m.shape, (std::vector<int64_t>{1, 1, 33, 40}));
    // Feeding the dump back, through the other backend, reproduces the output.
    CliResult b = run(cat({"run", "--backend", "cpu.reference", "--inputs", d1, "--dump", d2, "--seed", "99"}, spec));
    ASSERT_EQ(b.code, 0) << b.err;
    EXPECT_EQ(readFile(d1 + "/q.npy"), readFile(d2 + "/q.npy"));
    EXPECT_EQ(readFile(d1 + "/mask.npy"), readFile(d2 + "/mask.npy"));
    // Same inputs (the second run's --seed 99 is overridden by --inputs), another backend: the
    // outputs agree to the dtype's tolerance.
    attnscope::NpyArray o1 = attnscope::readNpy(d1 + "/out.npy"), o2 = attnscope::readNpy(d2 + "/out.npy");
    ASSERT_EQ(o1.data.size(), o2.data.size());
    const bool half = std::string(dtype) == "fp16";
    const size_t n = o1.data.size() / (half ? 2 : 4);
    double maxDiff = 0;
    for (size_t i = 0; i < n; ++i) {
      float a = 0, b = 0;
      if (half) {
        uint16_t ha, hb;
        std::memcpy(&ha, o1.data.data() + 2 * i, 2);
        std::memcpy(&hb, o2.data.data() + 2 * i, 2);
        a = attnscope::halfToFloat(ha);
        b = attnscope::halfToFloat(hb);
      } else {
        std::memcpy(&a, o1.data.data() + 4 * i, 4);
        std::memcpy(&b, o2.data.data() + 4 * i, 4);
      }
      maxDiff = std::max(maxDiff, static_cast<double>(std::fabs(a - b)));
    }
    EXPECT_LE(maxDiff, 2 * attnscope::toleranceFor(*attnscope::parseDType(dtype))) << dtype;
    EXPECT_GT(n, 0u);
  }
  const std::string d = dir_ + "/dump1-fp32";
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d, "--seq", "34"}, {"--heads", "2", "--head-dim", "8", "--mask", "dense:0.7", "--seq-kv", "40"})),
                   {"q.npy", "shape", "(1, 2, 33, 8)", "(1, 2, 34, 8)"});
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d, "--dtype", "fp16"}, cat(kSmall, {"--mask", "dense:0.7", "--seq-kv", "40"}))),
                   {"q.npy", "dtype", "<f4"});
  // Truncate k.npy.
  std::string k = readFile(d + "/k.npy");
  std::ofstream(d + "/k.npy", std::ios::binary | std::ios::trunc) << k.substr(0, k.size() - 10);
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d}, cat(kSmall, {"--mask", "dense:0.7", "--seq-kv", "40"}))),
                   {"k.npy", "truncated"});
}

// An additive (float) mask from the command line: both CPU backends run it with its mask_dtype,
// --dump writes it as a float mask.npy in the layout and --inputs reads it back; a mask_dtype that
// torch would refuse, one without an additive mask, an unknown one and head_dim 513 exit 2 naming
// the field and what is allowed. head_dim 512 runs.
TEST_F(Cli, AdditiveMaskRunsWithItsDTypeAndBadValuesExitTwo) {
  const auto spec = cat(kSmall, {"--dtype", "bf16", "--mask", "additive:0.5", "--mask-dtype", "fp32", "--mask-layout",
                                 "per_head", "--seq-kv", "40"});
  for (const char* backend : {"cpu.reference", "cpu.flash"}) {
    CliResult r = run(cat({"run", "--backend", backend, "--json"}, spec));
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["status"], "ok") << j["message"];
    EXPECT_TRUE(j["accuracy"]["passed"].get<bool>());
    EXPECT_EQ(j["memory"]["measured_peak"], j["memory"]["predicted_peak"]);
    EXPECT_EQ(j["spec"]["mask"], "additive:0.5");
    EXPECT_EQ(j["spec"]["mask_dtype"], "fp32");
    bool mask_planned = false;
    for (const auto& b : j["plan"]["buffers"])
      if (b["name"] == "mask") mask_planned = b["bytes"] == 2 * 33 * 40 * 4;  // [B,H,Lq,Lkv] fp32
    EXPECT_TRUE(mask_planned) << j["plan"].dump();
  }
  // The plain form the brief names, in q's dtype by default ("float" is read as additive).
  CliResult plain = run(cat({"run", "--backend", "cpu.flash", "--mask", "float", "--mask-dtype", "fp32"}, kSmall));
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_NE(plain.out.find("additive/broadcast/fp32"), std::string::npos) << plain.out;

  const std::string d1 = dir_ + "/additive1", d2 = dir_ + "/additive2";
  ASSERT_EQ(run(cat({"run", "--backend", "cpu.flash", "--dump", d1}, spec)).code, 0);
  const attnscope::NpyArray m = attnscope::readNpy(d1 + "/mask.npy");
  EXPECT_EQ(m.descr, "<f4");
  EXPECT_EQ(m.shape, (std::vector<int64_t>{1, 2, 33, 40}));
  CliResult back = run(cat({"run", "--backend", "cpu.reference", "--inputs", d1, "--dump", d2, "--seed", "5"}, spec));
  ASSERT_EQ(back.code, 0) << back.err;
  EXPECT_EQ(readFile(d1 + "/mask.npy"), readFile(d2 + "/mask.npy"));
  // The same file is not a bf16 mask (it is fp32), nor a broadcast one.
  const auto other = [&](const char* mask_dtype, const char* layout) {
    return cat(kSmall, {"--dtype", "bf16", "--mask", "additive:0.5", "--mask-dtype", mask_dtype, "--mask-layout", layout,
                        "--seq-kv", "40"});
  };
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d1}, other("bf16", "per_head"))),
                   {"mask.npy", "not a bf16 value"});
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d1}, other("fp32", "broadcast"))),
                   {"mask.npy", "shape", "(1, 2, 33, 40)", "(1, 1, 33, 40)"});

  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--dtype", "bf16", "--mask", "additive", "--mask-dtype", "fp16"}, kSmall)),
                   {"mask_dtype", "fp16", "allowed: q, fp32, bf16"});
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--mask", "causal", "--mask-dtype", "fp32"}, kSmall)),
                   {"mask_dtype", "only for an additive mask"});
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--mask", "additive", "--mask-dtype", "fp64"}, kSmall)),
                   {"mask_dtype", "fp64", "q (the same as dtype), fp32, fp16, bf16"});
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--mask", "additive:2"}, kSmall)), {"mask", "(0, 1]"});
  expectUsageError(run({"run", "--backend", "cpu.flash", "--head-dim", "513"}), {"head_dim", "1..512", "513"});
  CliResult wide = run({"run", "--backend", "cpu.flash", "--json", "--heads", "1", "--seq", "17", "--head-dim", "512",
                        "--mask", "additive"});
  ASSERT_EQ(wide.code, 0) << wide.err;
  EXPECT_TRUE(nlohmann::json::parse(wide.out)["accuracy"]["passed"].get<bool>());
  // A sweep over the mask's dtype: q's dtype and fp32.
  CliResult sweep = run(cat({"sweep", "--backends", "cpu.flash", "--dtype", "fp16", "--mask", "additive", "--mask-dtype",
                             "q,fp32", "--reps", "1", "--warmup", "0"}, kSmall));
  EXPECT_EQ(sweep.code, 0) << sweep.err;
}

namespace {
std::vector<float> npyFloats(const std::string& path) {
  attnscope::NpyArray a = attnscope::readNpy(path);
  EXPECT_EQ(a.descr, "<f4") << path;
  std::vector<float> out(a.data.size() / 4);
  std::memcpy(out.data(), a.data.data(), out.size() * 4);
  return out;
}
}  // namespace

// A train run's files: g.npy beside the inputs, dq/dk/dv.npy beside out.npy; fed back with
// --inputs (g.npy included), another backend reproduces the gradients.
TEST_F(Cli, TrainDumpAndInputsCarryGAndGradients) {
  const std::string d1 = dir_ + "/train1", d2 = dir_ + "/train2";
  auto spec = cat(kSmall, {"--pass", "train", "--mask", "causal", "--kv-heads", "1"});
  CliResult a = run(cat({"run", "--backend", "cpu.flash", "--dump", d1}, spec));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("Q+K+V+O+mask+G+dQ+dK+dV"), std::string::npos) << a.out;  // what io_bytes counts
  for (const char* f : {"q.npy", "k.npy", "v.npy", "out.npy", "g.npy", "dq.npy", "dk.npy", "dv.npy"}) EXPECT_TRUE(fs::exists(d1 + "/" + f)) << f;
  EXPECT_EQ(attnscope::readNpy(d1 + "/g.npy").shape, (std::vector<int64_t>{1, 2, 33, 8}));
  EXPECT_EQ(attnscope::readNpy(d1 + "/dk.npy").shape, (std::vector<int64_t>{1, 1, 33, 8}));
  CliResult b = run(cat({"run", "--backend", "cpu.reference", "--inputs", d1, "--dump", d2, "--seed", "99"}, spec));
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(readFile(d1 + "/g.npy"), readFile(d2 + "/g.npy"));
  for (const char* f : {"dq.npy", "dk.npy", "dv.npy"}) {
    const auto x = npyFloats(d1 + "/" + f), y = npyFloats(d2 + "/" + f);
    ASSERT_EQ(x.size(), y.size()) << f;
    double maxDiff = 0, maxAbs = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      maxDiff = std::max(maxDiff, static_cast<double>(std::fabs(x[i] - y[i])));
      maxAbs = std::max(maxAbs, static_cast<double>(std::fabs(x[i])));
    }
    EXPECT_LE(maxDiff, 1e-4) << f;
    EXPECT_GT(maxAbs, 1e-3) << f << " is all zeros";
  }
  // Without g.npy a train pass cannot read its inputs: the error names the file.
  fs::remove(d1 + "/g.npy");
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d1}, spec)), {"--inputs", "g.npy"});
  // A forward pass from the same folder does not need it.
  const CliResult forward = run(cat({"run", "--backend", "cpu.flash", "--inputs", d1}, cat(kSmall, {"--mask", "causal", "--kv-heads", "1"})));
  EXPECT_EQ(forward.code, 0) << forward.err;
}

// A layer's files: x and the weights in, y as out.npy and every gradient out; fed back through
// another backend they reproduce y and the gradients.
TEST_F(Cli, LayerDumpAndInputsCarryWeightsAndGradients) {
  const std::string d1 = dir_ + "/layer1", d2 = dir_ + "/layer2";
  const std::vector<std::string> spec{"--kind", "layer", "--pass", "train", "--width", "24", "--heads", "2", "--kv-heads", "1",
                                      "--seq", "17", "--mask", "causal"};
  CliResult a = run(cat({"run", "--backend", "cpu.flash", "--dump", d1}, spec));
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.out.find("x+weights+y+mask+G+grads"), std::string::npos) << a.out;
  const std::vector<std::pair<std::string, std::vector<int64_t>>> files{
      {"x.npy", {1, 17, 24}},  {"w_qkv.npy", {48, 24}}, {"b_qkv.npy", {48}},     {"w_o.npy", {24, 24}},  {"b_o.npy", {24}},
      {"out.npy", {1, 17, 24}}, {"g.npy", {1, 17, 24}},  {"dx.npy", {1, 17, 24}}, {"dw_qkv.npy", {48, 24}}, {"db_qkv.npy", {48}},
      {"dw_o.npy", {24, 24}},   {"db_o.npy", {24}}};
  for (const auto& [name, shape] : files) {
    ASSERT_TRUE(fs::exists(d1 + "/" + name)) << name;
    EXPECT_EQ(attnscope::readNpy(d1 + "/" + name).shape, shape) << name;
  }
  EXPECT_FALSE(fs::exists(d1 + "/q.npy"));
  CliResult b = run(cat({"run", "--backend", "cpu.reference", "--inputs", d1, "--dump", d2, "--seed", "99"}, spec));
  ASSERT_EQ(b.code, 0) << b.err;
  for (const char* f : {"x.npy", "w_qkv.npy", "b_o.npy", "g.npy"}) EXPECT_EQ(readFile(d1 + "/" + f), readFile(d2 + "/" + f)) << f;
  for (const char* f : {"out.npy", "dx.npy", "dw_qkv.npy", "db_qkv.npy", "dw_o.npy", "db_o.npy"}) {
    const auto x = npyFloats(d1 + "/" + f), y = npyFloats(d2 + "/" + f);
    ASSERT_EQ(x.size(), y.size()) << f;
    double maxDiff = 0, maxAbs = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      maxDiff = std::max(maxDiff, static_cast<double>(std::fabs(x[i] - y[i])));
      maxAbs = std::max(maxAbs, static_cast<double>(std::fabs(x[i])));
    }
    EXPECT_LE(maxDiff, 1e-4 * std::max(1.0, maxAbs)) << f;
    EXPECT_GT(maxAbs, 1e-3) << f << " is all zeros";
  }
  fs::remove(d1 + "/w_o.npy");
  expectUsageError(run(cat({"run", "--backend", "cpu.flash", "--inputs", d1}, spec)), {"--inputs", "w_o.npy"});
}

// `show R --phases` and `show S --phases`: the run's table, and every point's phases side by side.
TEST_F(Cli, ShowPhasesForARunAndASweep) {
  // Forward, train and train with checkpoint in one sweep (forward with a checkpoint is left out).
  CliResult s = run({"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "2", "--seq", "24", "--head-dim", "8",
                     "--pass", "forward,train", "--checkpoint", "none,attention", "--reps", "1", "--warmup", "0", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  auto sj = nlohmann::json::parse(s.out);
  const std::string id = "S" + std::to_string(sj["sweep_id"].get<int64_t>());
  ASSERT_EQ(sj["runs"].size(), 6u);
  for (const auto& r : sj["runs"]) EXPECT_EQ(r["status"], "ok") << r.dump();
  CliResult text = run({"show", id, "--phases"});
  ASSERT_EQ(text.code, 0) << text.err;
  for (const char* want : {"phases (mean time per occurrence", "scores", "softmax", "attention", "backward dQ", "peak memory", "train"})
    EXPECT_NE(text.out.find(want), std::string::npos) << want << "\n" << text.out;
  CliResult json = run({"show", id, "--phases", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["phases"].size(), 6u);
  std::set<std::string> names;
  for (const auto& r : j["phases"])
    for (const auto& p : r["phases"]) names.insert(p["name"].get<std::string>());
  EXPECT_TRUE(names.count("scores") && names.count("attention") && names.count("backward dK dV")) << json.out;
  const std::string runId = "R" + std::to_string(j["phases"][0]["run"].get<int64_t>());
  CliResult one = run({"show", runId, "--phases"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("share"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("inputs"), std::string::npos) << one.out;
}

TEST_F(Cli, SweepThenRunsShowCompareAndExport) {
  CliResult s = run({"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "1,2", "--seq", "16,32", "--head-dim", "8",
                     "--reps", "1", "--name", "tiny", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  auto sj = nlohmann::json::parse(s.out);
  const std::string id = "S" + std::to_string(sj["sweep_id"].get<int64_t>());
  ASSERT_EQ(sj["runs"].size(), 8u);
  CliResult runs = run({"runs", "--json"});
  ASSERT_EQ(runs.code, 0) << runs.err;
  auto rj = nlohmann::json::parse(runs.out);
  ASSERT_EQ(rj.size(), 1u);
  EXPECT_EQ(rj[0]["name"], "tiny");
  EXPECT_EQ(rj[0]["run_count"], 8);
  CliResult show = run({"show", id});
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_NE(show.out.find("cpu.flash"), std::string::npos);
  const std::string runId = "R" + std::to_string(sj["runs"][0]["id"].get<int64_t>());
  CliResult showRun = run({"show", runId, "--kernels"});
  ASSERT_EQ(showRun.code, 0) << showRun.err;
  EXPECT_NE(showRun.out.find("predicted peak"), std::string::npos);
  EXPECT_NE(showRun.out.find("allocator peak"), std::string::npos);
  CliResult cmp = run({"compare", id, id, "--json"});
  ASSERT_EQ(cmp.code, 0) << cmp.err;
  EXPECT_EQ(nlohmann::json::parse(cmp.out)["points"].size(), 8u);
  const std::string csv = dir_ + "/out.csv", json = dir_ + "/out.json", trace = dir_ + "/trace.json";
  ASSERT_EQ(run({"export", id, "--format", "csv", "--out", csv}).code, 0);
  std::string text = readFile(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 9);
  ASSERT_EQ(run({"export", id, "--format", "json", "--out", json}).code, 0);
  EXPECT_EQ(nlohmann::json::parse(readFile(json))["runs"].size(), 8u);
  ASSERT_EQ(run({"export", id, "--format", "trace", "--out", trace}).code, 0);
  auto tj = nlohmann::json::parse(readFile(trace));
  EXPECT_GT(tj["traceEvents"].size(), 8u);
  expectUsageError(run({"show", "S999"}), {"no sweep S999"});
}

// A sweep's exit status follows its points: points skipped by the budget are what exploring a
// grid finds (exit 0); a wrong point exits 1 (test_cli_limits). Names: an empty --name means the
// default name, and a name that is not UTF-8 or too long is refused before the database exists.
TEST_F(Cli, SweepExitStatusAndNames) {
  CliResult s = run({"sweep", "--backends", "cpu.reference", "--heads", "1,16", "--seq", "16,2048", "--head-dim", "8",
                     "--reps", "1", "--warmup", "0", "--budget", "1MiB", "--name", "", "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  auto sj = nlohmann::json::parse(s.out);
  int skipped = 0;
  for (const auto& r : sj["runs"]) skipped += r["status"] == "skipped";
  EXPECT_GT(skipped, 0) << s.out;
  EXPECT_EQ(sj["name"].get<std::string>().rfind("sweep 20", 0), 0u) << sj["name"];

  // Every point wrong (a scale that overflows the softmax): the sweep is saved and exits 1.
  CliResult wrong = run({"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "1", "--seq", "16", "--head-dim",
                         "8", "--scale", "3e38", "--reps", "1", "--warmup", "0", "--quiet"});
  EXPECT_EQ(wrong.code, 1) << wrong.err;
  EXPECT_NE(wrong.err.find("error: 2 of 2 points failed in sweep S2 (2 wrong: failed the accuracy check)"),
            std::string::npos)
      << wrong.err;
  EXPECT_NE(wrong.out.find("saved 2 of 2 points"), std::string::npos) << wrong.out;

  fs::remove(db_);
  expectUsageError(run({"sweep", "--backends", "cpu.reference", "--heads", "1", "--seq", "16", "--name", "bad\xff"}),
                   {"--name: the name is not valid UTF-8 text"});
  expectUsageError(run({"run", "--backend", "cpu.reference", "--heads", "1", "--seq", "16", "--name", std::string(201, 'n')}),
                   {"--name: the name is 201 bytes long (at most 200)"});
  EXPECT_FALSE(fs::exists(db_)) << "a refused name left a database file";
}

// compare names the fixed fields that differ above the table, and marks pairs that are not
// comparable (an attention call against a whole layer) instead of dividing their figures.
TEST_F(Cli, CompareSaysWhatDiffersAndMarksPairsOfAnotherKind) {
  for (const char* kind : {"attention", "layer"})
    ASSERT_EQ(run({"sweep", "--backends", "cpu.flash", "--kind", kind, "--heads", "1,2", "--seq", "16", "--head-dim", "8",
                   "--reps", "1", "--warmup", "0", "--quiet"})
                  .code,
              0);
  CliResult text = run({"compare", "S1", "S2"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("fixed fields that differ: kind (attention in S1, layer in S2)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not comparable point for point: kind differs"), std::string::npos) << text.out;
  auto j = nlohmann::json::parse(run({"compare", "S1", "S2", "--json"}).out);
  EXPECT_EQ(j["differing_fields"]["kind"], nlohmann::json::array({"attention", "layer"}));
  ASSERT_EQ(j["points"].size(), 2u);
  for (const auto& p : j["points"]) {
    EXPECT_TRUE(p.contains("not_comparable")) << p.dump();
    EXPECT_FALSE(p.contains("time_ratio")) << p.dump();
  }
  // Two runs: their differing fields too.
  auto rj = nlohmann::json::parse(run({"compare", "R1", "R3", "--json"}).out);
  EXPECT_TRUE(rj["differing_fields"].contains("kind")) << rj.dump();
}

TEST_F(Cli, RefusesAForeignFileAndLeavesItUntouched) {
  const std::string notes = dir_ + "/notes.sqlite";
  std::ofstream(notes) << "these are my notes, not a database\n";
  const std::string before = readFile(notes);
  CliResult r = runCli({"runs", "--db", notes});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("notes.sqlite"), std::string::npos) << r.err;
  EXPECT_EQ(readFile(notes), before);
  EXPECT_FALSE(fs::exists(notes + "-wal"));
}

TEST_F(Cli, SweepKilledWithSigkillKeepsEveryFinishedPoint) {
  pid_t pid = startCli({"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "4", "--seq",
                        "64,128,256,512,1024,1536,2048,3072,4096", "--reps", "3", "--db", db_});
  // Wait until some points are committed, then kill the process mid-sweep.
  auto countRuns = [&]() -> int {
    sqlite3* db = nullptr;
    int n = -1;
    if (sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 2000);
      sqlite3_stmt* st = nullptr;
      if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM runs", -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int(st, 0);
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    return n;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  int seen = 0;
  while (std::chrono::steady_clock::now() < deadline && (seen = countRuns()) < 4)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(seen, 4) << "sweep made no progress";
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the sweep finished before it could be killed";
  CliResult runs = run({"runs", "--json"});
  ASSERT_EQ(runs.code, 0) << runs.err;
  auto j = nlohmann::json::parse(runs.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_GE(j[0]["run_count"].get<int>(), seen);
  EXPECT_LT(j[0]["run_count"].get<int>(), 18);
  for (const auto& r : j[0]["runs"]) {
    CliResult show = run({"show", "R" + std::to_string(r["id"].get<int64_t>()), "--json"});
    ASSERT_EQ(show.code, 0) << show.err;
    EXPECT_EQ(nlohmann::json::parse(show.out)["status"], "ok");
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "ok");
  sqlite3_finalize(st);
  sqlite3_close(db);
}

// A tensor-parallel run's ranks read as a table (peak, time, communication share), not as raw
// tp.rank<r>.* facts; a rank whose facts are missing shows dashes.
TEST_F(Cli, ShowPrintsATensorParallelRunsRanksAsATable) {
  using namespace attnscope;
  {
    Store store(db_);
    SweepSpec sw;
    sw.backends = {"torch.cpu.auto"};
    const int64_t sweep = store.createSweep(sw, store.saveEnvironment(Environment{}));
    RunResult r;
    r.backend = "torch.cpu.auto";
    r.device = "cpu";
    r.spec.kind = WorkloadKind::layer;
    r.spec.tp = 2;
    r.facts = {{"torch", "2.15.0"},
               {"tp.ranks", "3"},
               {"tp.rank0.peak_bytes", "18374656"},
               {"tp.rank0.seconds", "0.206381"},
               {"tp.rank0.comm_share", "0.0411"},
               {"tp.rank1.peak_bytes", "1048576"},
               {"tp.rank1.seconds", "0.5"},
               {"tp.rank1.comm_share", "0.25"}};
    ASSERT_EQ(store.saveRun(sweep, r), 1);
  }
  const CliResult shown = run({"show", "R1"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("ranks             rank  peak        time (median)  communication"), std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.find("0  17.5 MiB    206 ms         4.1 % of its time"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("1  1.00 MiB    500 ms         25.0 % of its time"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("2  -           -              -"), std::string::npos) << shown.out;
  EXPECT_EQ(shown.out.find("tp.rank0.peak_bytes"), std::string::npos) << shown.out;
}
