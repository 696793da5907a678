// The memory frontier (core/engine/frontier.h) held to its definition by brute force: for every
// one of our backends and torch kernels (2.1 on a V100, 2.15 on an H100 and on the CPU), forward
// and train, at budgets just at and just below a point's peak, the reported max is the largest
// seq (batch, heads) that fits together with every smaller one, the next one does not, and
// max_aligned is the largest fitting multiple of 16 beyond it. Then the classic report (width 64,
// fp16, a bool mask, torch 2.1, V100) against the memory formulas written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "core/backend/backend_registry.h"
#include "core/engine/frontier.h"
#include "kernels/builtin_backends.h"

namespace attnscope {
namespace {

using torch_dispatch::SdpaKernel;
using torch_dispatch::TorchDevice;
using torch_dispatch::TorchTarget;

TorchTarget target(const char* version, TorchDevice device, int sm) {
  TorchTarget t = torch_dispatch::defaultTorchTarget(*torch_dispatch::parseTorchVersion(version), device,
                                                     {sm / 10, sm % 10});
  t.cpu_threads = 2;
  return t;
}

std::vector<FrontierLine> allLines(BackendRegistry& registry) {
  registerBuiltinBackends(registry);
  std::vector<FrontierLine> lines;
  for (std::string_view id : kFrontierBackends)
    if (Backend* b = registry.find(id)) lines.push_back(backendFrontierLine(*b));
  const std::vector<std::pair<TorchTarget, std::vector<std::optional<SdpaKernel>>>> torch = {
      {target("2.1", TorchDevice::cuda, 70), {std::nullopt, SdpaKernel::math, SdpaKernel::efficient}},
      {target("2.15", TorchDevice::cuda, 90), {std::nullopt, SdpaKernel::flash, SdpaKernel::cudnn, SdpaKernel::efficient}},
      {target("2.15", TorchDevice::cpu, 0), {std::nullopt, SdpaKernel::math, SdpaKernel::flash}}};
  for (const auto& [t, kernels] : torch)
    for (const auto& k : kernels)
      lines.push_back(torchFrontierLine(torchFrontierName(t, k), t, k));
  return lines;
}

FrontierPeak predictAt(const FrontierLine& line, const FrontierQuery& q, int64_t other, int64_t v) {
  const WorkloadSpec s = withAxis(withAxis(q.spec, q.other, other), q.vary, v);
  if (!validate(s).empty()) return {};
  return line.predict(s);
}
bool fitsAt(const FrontierLine& line, const FrontierQuery& q, int64_t other, int64_t v) {
  const FrontierPeak p = predictAt(line, q, other, v);
  return p.runs && p.bytes >= 0 && p.bytes <= q.budget;
}

// Brute force: from the first value the line runs at, the last one before the first that does
// not fit; and the largest fitting multiple of 16 up to `limit`.
void expectMatchesBruteForce(const FrontierLine& line, const FrontierQuery& q, int64_t other, int64_t limit) {
  const FrontierPoint pt = frontierPoint(q, line, other);
  SCOPED_TRACE(line.name + " " + summary(withAxis(q.spec, q.other, other)) + " budget " + std::to_string(q.budget));
  ASSERT_FALSE(pt.unbounded) << "the budgets here are small: something must stop the line";
  ASSERT_LT(pt.max, limit) << "raise the brute force's limit";
  int64_t start = 1;
  while (start <= kFrontierStartScan && !predictAt(line, q, other, start).runs) ++start;
  int64_t contiguous = start - 1;
  while (contiguous + 1 <= limit && fitsAt(line, q, other, contiguous + 1)) ++contiguous;
  EXPECT_EQ(pt.max, contiguous < start ? 0 : contiguous);
  if (q.vary == FrontierAxis::seq) {
    int64_t aligned = 0;
    for (int64_t v = kFrontierSeqAlign; v <= limit; v += kFrontierSeqAlign)
      if (fitsAt(line, q, other, v)) aligned = v;
    EXPECT_EQ(pt.max_aligned, aligned > pt.max ? aligned : 0);
  } else {
    for (int64_t v = pt.max + 1; v <= limit; ++v) EXPECT_FALSE(fitsAt(line, q, other, v)) << "value " << v << " fits again";
  }
  if (pt.max > 0) {
    EXPECT_LE(pt.peak_at_max, q.budget);
    EXPECT_GT(pt.peak_at_max, 0);
  }
}

struct Shape {
  const char* what;
  WorkloadSpec spec;
};

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (Pass pass : {Pass::forward, Pass::train})
    for (const char* mask : {"none", "causal", "dense"})
      for (DType dt : {DType::fp32, DType::fp16}) {
        WorkloadSpec s;
        s.head_dim = 8;
        s.dtype = dt;
        s.pass = pass;
        s.mask = *parseMask(mask).mask;
        out.push_back({mask, s});
      }
  return out;
}

TEST(Frontier, SeqIsTheLongestThatFitsWithEveryShorterOne) {
  BackendRegistry registry;
  const auto lines = allLines(registry);
  ASSERT_GE(lines.size(), 11u);
  EXPECT_EQ(lines[2].name.substr(0, 9), std::string(registry.find("cuda.math") ? "cuda.math" : "torch 2.1"));
  for (const auto& shape : shapes())
    for (const auto& line : lines) {
      FrontierQuery q;
      q.spec = shape.spec;
      q.vary = FrontierAxis::seq;
      q.other = FrontierAxis::heads;
      for (int64_t at : {9, 40, 97}) {
        const FrontierPeak p = line.predict(withAxis(withAxis(q.spec, q.other, 2), q.vary, at));
        if (!p.runs || p.bytes <= 0) continue;  // the kernel cannot run this shape: nothing to search
        for (int64_t budget : {p.bytes, p.bytes - 1}) {
          q.budget = budget;
          expectMatchesBruteForce(line, q, 2, 4 * at + 64);
        }
      }
    }
}

TEST(Frontier, BatchAndHeadsAreTheLargestThatFit) {
  BackendRegistry registry;
  const auto lines = allLines(registry);
  for (const auto& line : lines)
    for (FrontierAxis vary : {FrontierAxis::batch, FrontierAxis::heads}) {
      FrontierQuery q;
      q.spec.head_dim = 8;
      q.spec.seq_q = 48;
      q.spec.dtype = DType::fp16;
      q.vary = vary;
      q.other = vary == FrontierAxis::batch ? FrontierAxis::heads : FrontierAxis::batch;
      const FrontierPeak p = line.predict(withAxis(withAxis(q.spec, q.other, 2), vary, 11));
      if (!p.runs || p.bytes <= 0) continue;
      q.budget = p.bytes;
      expectMatchesBruteForce(line, q, 2, 60);
    }
}

TEST(Frontier, HeadsWithAFixedWidthTakeOnlyItsDivisors) {
  BackendRegistry registry;
  registerBuiltinBackends(registry);
  const FrontierLine line = backendFrontierLine(*registry.find("cpu.reference"));
  FrontierQuery q;
  q.spec.width = 48;
  q.spec.seq_q = 64;
  q.vary = FrontierAxis::heads;
  q.other = FrontierAxis::batch;
  q.budget = line.predict(withAxis(q.spec, FrontierAxis::heads, 12)).bytes;
  const FrontierPoint pt = frontierPoint(q, line, 1);
  EXPECT_EQ(pt.max, 12) << "48's divisors: 12 fits, 16 does not";
  EXPECT_GT(pt.next_peak, q.budget);
}

// The classic report: width 64, fp16, a bool mask [1,1,L,L], torch 2.1 on a 16 GiB V100. At 16
// heads head_dim is 4, efficient refuses it (not a multiple of 8), torch runs math; at 8 heads
// (head_dim 8) efficient. The figures below come from the memory formulas, not the explainer.
TEST(Frontier, TheClassicReportOnAV100) {
  const auto v100 = gpuBudget("V100");
  ASSERT_TRUE(v100);
  EXPECT_EQ(v100->capacity, int64_t{16} << 30);
  EXPECT_EQ(v100->reserve, (int64_t{512} << 20) + std::llround(0.02 * double(int64_t{16} << 30)));
  const int64_t budget = v100->budget();
  const TorchTarget t = target("2.1", TorchDevice::cuda, 70);

  FrontierQuery q;
  q.spec.width = 64;
  q.spec.dtype = DType::fp16;
  q.spec.mask = *parseMask("dense").mask;
  q.budget = budget;
  const FrontierPoint picks16 = frontierPoint(q, torchFrontierLine("picks", t, std::nullopt), 16);
  EXPECT_EQ(picks16.kernel_at_max, "math");
  // Math at H heads, L = seq, fp16, H * D = 64: q, k, v and q*sqrt(scale) (128 L bytes each), the
  // bool mask (L^2) and its fp16 conversion (2 L^2), scores and softmax (2 H L^2 each), and
  // cuBLAS's workspace on sm70 (4 MiB * 2 + 16 KiB * 8), all live at the softmax.
  const int64_t workspace = 4096 * 1024 * 2 + 16 * 1024 * 8;
  auto math = [&](int64_t h, int64_t l) { return 512 * l + (3 + 4 * h) * l * l + workspace; };
  int64_t l16 = static_cast<int64_t>(std::sqrt(double(budget) / 67.0));
  while (math(16, l16 + 1) <= budget) ++l16;
  while (math(16, l16) > budget) --l16;
  EXPECT_EQ(picks16.max, l16);
  EXPECT_EQ(picks16.max, 15589);  // the user guide's figure

  // Efficient at 8 heads: the conversion holds q, k, v (128 L bytes each), the mask, its fp16 copy
  // and logical_not(mask) (4 L^2); the kernel q, k, v, the output, the mask and its copy (3 L^2),
  // and for an unaligned L the mask expanded to 8 heads and padded to 16 columns.
  const FrontierPoint picks8 = frontierPoint(q, torchFrontierLine("picks", t, std::nullopt), 8);
  EXPECT_EQ(picks8.kernel_at_max, "efficient");
  auto pad16 = [](int64_t l) { return (l + 15) / 16 * 16; };
  auto efficient = [&](int64_t l) {
    return std::max(384 * l + 4 * l * l, 512 * l + 3 * l * l + (l % 16 ? 8 * l * pad16(l) * 2 : 0));
  };
  int64_t contiguous = 0;
  for (int64_t step = int64_t{1} << 16; step > 0; step /= 2)
    for (;;) {
      bool all = true;
      for (int64_t u = contiguous + step; u > std::max<int64_t>(0, contiguous + step - 16); --u) all = all && efficient(u) <= budget;
      if (!all) break;
      contiguous += step;
    }
  EXPECT_EQ(picks8.max, contiguous);
  int64_t aligned = (static_cast<int64_t>(std::sqrt(double(budget) / 4.0)) / 16 + 2) * 16;
  while (efficient(aligned) > budget) aligned -= 16;
  EXPECT_EQ(picks8.max_aligned, aligned);
  EXPECT_EQ(picks8.max_aligned, 63776);  // the user guide's figure
  EXPECT_GT(picks8.max_aligned, 4 * picks16.max) << "the cliff: 8 heads reach 4x further than 16";
}

TEST(Frontier, GpuBudgetsAndAxes) {
  EXPECT_EQ(gpuBudget("A100")->capacity, int64_t{80} << 30);
  EXPECT_EQ(gpuBudget("A100-40GB")->capacity, int64_t{40} << 30);
  EXPECT_EQ(gpuBudget("NVIDIA H100 80GB HBM3")->gpu, "H100");
  EXPECT_EQ(gpuBudget("V100", int64_t{1} << 30)->budget(), int64_t{15} << 30);
  EXPECT_FALSE(gpuBudget("sm80")) << "a capability names no memory";
  EXPECT_FALSE(gpuBudget("V100", int64_t{16} << 30)) << "a reserve that leaves nothing";
  EXPECT_FALSE(gpuBudget("K80"));
  EXPECT_EQ(torchFrontierName(target("2.1", TorchDevice::cuda, 70), std::nullopt), "torch 2.1 sm70 (picks)");
  EXPECT_EQ(torchFrontierName(target("2.5.1", TorchDevice::cpu, 0), SdpaKernel::math), "torch 2.5.1 cpu math");
  EXPECT_EQ(torchFrontierKernels(TorchDevice::cpu).size(), 3u);
  EXPECT_EQ(torchFrontierKernels(TorchDevice::cuda).size(), 5u);
  EXPECT_EQ(parseFrontierAxis("batch"), FrontierAxis::batch);
  EXPECT_FALSE(parseFrontierAxis("Seq"));
  FrontierQuery q;
  q.vary = q.other = FrontierAxis::heads;
  q.budget = 1;
  EXPECT_THROW(computeFrontier(q, {}), std::invalid_argument);
}

}  // namespace
}  // namespace attnscope
