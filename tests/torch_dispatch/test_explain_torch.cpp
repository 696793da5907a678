// The explainer against the real torch on CPU (ATTNSCOPE_TEST_PYTHON: a Python with torch; the
// test exits 77, "skipped", with a message when it is unset). On a grid of shapes, masks, dtypes
// and GQA, through scripts/sdpa_measure.py:
//  - the explainer's kernel equals torch._fused_sdp_choice for every case;
//  - its predicted extra memory (peak minus the caller's q, k, v, mask) equals the profiler's
//    peak for the CPU flash and CPU math kernels within kToleranceBytes (the 4-byte scalar
//    tensors torch creates around the mask conversion and _safe_softmax are not modelled).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "core/torch_dispatch/explain_grid.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

namespace {

constexpr int64_t kToleranceBytes = 16;
constexpr int kThreads = 2;

std::string python() {
  const char* p = std::getenv("ATTNSCOPE_TEST_PYTHON");
  if (!p || !*p) {
    std::cout << "SKIP: ATTNSCOPE_TEST_PYTHON is not set (a Python with torch; scripts/torch-venv.sh prints one)\n";
    std::exit(77);
  }
  return p;
}

nlohmann::json caseJson(const GridCase& g, const TorchVersion& v, size_t id) { return measureCaseJson(g, v, kThreads, id); }

// Runs the measuring script on the cases; returns torch's version and one result per case.
nlohmann::json measure(const std::vector<nlohmann::json>& cases) {
  const std::string in = testing::TempDir() + "explain_cases.json";
  const std::string out = testing::TempDir() + "explain_results.json";
  std::ofstream(in) << nlohmann::json(cases).dump();
  const std::string cmd = "'" + python() + "' " + ATTNSCOPE_SOURCE_DIR "/scripts/sdpa_measure.py < '" + in + "' > '" + out + "'";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << cmd;
  std::ifstream f(out);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return nlohmann::json::parse(text);
}

TorchVersion installedVersion() {
  static const TorchVersion v = [] {
    const std::string out = testing::TempDir() + "explain_version.txt";
    const std::string cmd = "'" + python() + "' -c 'import torch; print(torch.__version__)' > '" + out + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    std::ifstream f(out);
    std::string text;
    std::getline(f, text);
    auto parsed = parseTorchVersion(text);
    EXPECT_TRUE(parsed) << "torch " << text << " is not covered by the explainer";
    return parsed.value_or(kNewestTorch);
  }();
  return v;
}

TorchTarget cpuTarget() {
  auto t = defaultTorchTarget(installedVersion(), TorchDevice::cpu);
  t.cpu_threads = kThreads;
  applyLocalCpu(t);  // the CPU flash pack path depends on this machine's AMX
  return t;
}

std::vector<GridCase> grid() {
  std::vector<GridCase> out;
  struct Heads { int64_t h, kv; };
  struct Seqs { int64_t q, kv; };
  struct Elem { int64_t d; DType dtype; };
  const char* masks[] = {"none", "causal", "dense", "window:32", "block:50"};
  for (Heads h : {Heads{4, 0}, Heads{8, 2}})
    for (Seqs s : {Seqs{64, 0}, Seqs{800, 0}, Seqs{96, 300}})
      for (Elem e : {Elem{4, DType::fp32}, Elem{4, DType::bf16}, Elem{4, DType::fp16}, Elem{64, DType::fp32}, Elem{64, DType::fp16}})
        for (const char* m : masks)
          for (MaskLayout layout : {MaskLayout::broadcast, MaskLayout::per_head}) {
            WorkloadSpec w;
            w.batch = 2;
            w.heads = h.h;
            w.kv_heads = h.kv;
            w.seq_q = s.q;
            w.seq_kv = s.kv;
            w.head_dim = e.d;
            w.dtype = e.dtype;
            w.mask = *parseMask(m).mask;
            w.mask_layout = layout;
            if (layout == MaskLayout::per_head && w.mask.kind != MaskKind::dense) continue;
            if (!validate(w).empty()) continue;  // block needs Lq == Lkv
            out.push_back({w, std::nullopt});
          }
  return out;
}

}  // namespace

TEST(ExplainAgainstTorchCpu, ChoiceEqualsFusedSdpChoiceAndPeakEqualsProfiler) {
  const TorchTarget t = cpuTarget();
  const auto cases = grid();
  std::vector<nlohmann::json> input;
  for (size_t i = 0; i < cases.size(); ++i) input.push_back(caseJson(cases[i], t.version, i));
  const nlohmann::json measured = measure(input);
  ASSERT_EQ(measured["results"].size(), cases.size());
  int64_t worst = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& r = measured["results"][i];
    const auto x = explainSdpa(cases[i].spec, t, ExplainOptions{false});
    const std::string what = summary(cases[i].spec) + " (" + x.call.describe() + ")";
    ASSERT_FALSE(r.contains("error")) << what << ": " << r.value("error", "");
    ASSERT_TRUE(x.chosen) << what;
    EXPECT_EQ(r["choice"].get<int>(), fusedSdpChoiceIndex(*x.chosen)) << what << ": " << x.headline();
    const int64_t got = r["extra_bytes"].get<int64_t>();
    worst = std::max(worst, std::abs(got - x.extraBytes()));
    EXPECT_LE(std::abs(got - x.extraBytes()), kToleranceBytes)
        << what << ": torch " << toString(*x.chosen) << " measured " << got << " predicted " << x.extraBytes();
  }
  std::cout << cases.size() << " cases on torch " << measured["torch"].get<std::string>()
            << "; largest |measured - predicted| = " << worst << " B\n";
}

TEST(ExplainAgainstTorchCpu, ForcedMathPeakEqualsProfiler) {
  const TorchTarget t = cpuTarget();
  std::vector<GridCase> cases;
  for (const auto& g : grid())
    if (g.spec.seq_q != 800 && g.spec.head_dim == 4) cases.push_back({g.spec, SdpaKernel::math});
  std::vector<nlohmann::json> input;
  for (size_t i = 0; i < cases.size(); ++i) input.push_back(caseJson(cases[i], t.version, i));
  const nlohmann::json measured = measure(input);
  ASSERT_EQ(measured["results"].size(), cases.size());
  int64_t worst = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& r = measured["results"][i];
    const auto f = explainForcedSdpa(cases[i].spec, t, SdpaKernel::math);
    const std::string what = summary(cases[i].spec);
    ASSERT_FALSE(r.contains("error")) << what << ": " << r.value("error", "");
    const int64_t got = r["extra_bytes"].get<int64_t>();
    worst = std::max(worst, std::abs(got - f.memory.extraBytes()));
    EXPECT_LE(std::abs(got - f.memory.extraBytes()), kToleranceBytes)
        << what << ": measured " << got << " predicted " << f.memory.extraBytes();
  }
  std::cout << cases.size() << " forced-math cases; largest |measured - predicted| = " << worst << " B\n";
}
