// Stacks of layers (layers > 1) on the torch backends with the real torch of ATTNSCOPE_TEST_PYTHON:
// each layer with its own weights from the run folder, forward and train with every checkpoint
// mode, held per layer against the float64 check (core/check/reference_layer.h checkStack); the
// phases nest per layer as the CPU backends' do (L<n>/qkv_proj, L<n>/recompute/...); and the
// measured peak orders the checkpoint modes as checkpointing promises across a stack. Exits 77
// (skipped) without ATTNSCOPE_TEST_PYTHON.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "core/trace/phase_summary.h"
#include "tests/support/corrupting_backend.h"
#include "tests/torch/real_torch_test.h"
#include "tests/torch/torch_test_support.h"

namespace attnscope {
namespace {

using namespace torchtest;

WorkloadSpec stack(WorkloadSpec s, int64_t layers, Pass pass, Checkpoint c, int64_t width = 0) {
  s.kind = WorkloadKind::layer;
  s.layers = layers;
  s.pass = pass;
  s.checkpoint = c;
  s.width = width;
  return s;
}

std::set<std::string> phasePaths(const RunResult& r) {
  std::set<std::string> names;
  for (const PhaseStats& p : summarizePhases(r.trace.events)) names.insert(p.name);
  return names;
}

std::string label(const Backend& b, const WorkloadSpec& s, const RunResult& r) {
  return b.id() + " " + summary(s) + ": " + r.message;
}

struct TorchStack : RealTorchTest {};

TEST_F(TorchStack, EveryLayerOfEveryCheckpointModePassesTheFloat64Check) {
  std::vector<WorkloadSpec> specs;
  for (int64_t n : {2, 3}) {
    specs.push_back(stack(spec(4, 40, 40, 16, "causal", 2), n, Pass::forward, Checkpoint::none, 48));
    for (Checkpoint c : {Checkpoint::none, Checkpoint::attention, Checkpoint::layer})
      specs.push_back(stack(spec(4, 40, 40, 16, "causal", 2), n, Pass::train, c, 48));
  }
  specs.push_back(stack(spec(2, 33, 33, 16, "window:8", 0, DType::bf16), 2, Pass::train, Checkpoint::layer));
  for (torch::TorchBackend* b : {&mathB, &autoB})
    for (const WorkloadSpec& s : specs) {
      if (b == &autoB && s.layers == 3) continue;  // the kernel does not change what a stack is
      const RunResult r = runOnce(*b, s);
      SCOPED_TRACE(label(*b, s, r));
      ASSERT_EQ(r.status, RunStatus::ok);
      EXPECT_TRUE(r.accuracy.checked);
      EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
      EXPECT_GT(r.memory.measured_peak, 0);
      // Each layer's forward and (train) backward under its own L<n>, with the stages inside.
      const std::set<std::string> paths = phasePaths(r);
      const bool train = s.pass == Pass::train;
      for (int64_t l = 1; l <= s.layers; ++l) {
        const std::string L = "L" + std::to_string(l);
        EXPECT_TRUE(paths.count(L)) << L;
        for (const char* p : {"qkv_proj", "attention", "out_proj"}) EXPECT_TRUE(paths.count(L + "/" + p)) << L << p;
        for (const char* p : {"out_proj_backward", "attention_backward", "qkv_proj_backward"})
          EXPECT_EQ(paths.count(L + "/" + p), train ? 1u : 0u) << L << p;
        // checkpoint layer reruns the layer's forward first; checkpoint attention its attention.
        EXPECT_EQ(paths.count(L + "/recompute/qkv_proj"), s.checkpoint == Checkpoint::layer ? 1u : 0u) << L;
        EXPECT_EQ(paths.count(L + "/attention_backward/recompute"), s.checkpoint == Checkpoint::attention ? 1u : 0u) << L;
      }
      EXPECT_FALSE(paths.count("qkv_proj"));  // nothing outside the layers
    }
}

// Each layer's own weights and gradients reach the check: a planted error in layer 2's dW fails
// layer 2; one in layer 2's dx, the gradient reaching layer 1 (its G), fails layer 1, whose dO
// then disagrees with it.
TEST_F(TorchStack, APlantedErrorInADeeperLayerFailsItsLayer) {
  const WorkloadSpec s = stack(spec(4, 24, 24, 8, "causal", 2), 3, Pass::train, Checkpoint::layer, 40);
  for (int plant : {0, 1}) {
    int seen = 0;  // the layers' gradients arrive in turn: layer 2's is the second
    testing::CorruptingBackend bad(mathB, [plant, &seen](testing::Results r) {
      if (!r.layer || ++seen != 2) return;
      if (plant == 0) r.layer->dw_qkv[7] += 0.5f;
      if (plant == 1) r.layer->dx[3] -= 0.5f;
    });
    const RunResult r = runOnce(bad, s);
    SCOPED_TRACE(r.message);
    EXPECT_EQ(r.status, RunStatus::wrong);
    EXPECT_NE(r.message.find(plant == 0 ? "layer 2: dw_qkv" : "layer 1: dO"), std::string::npos);
  }
}

// What checkpointing buys across a stack, measured: every layer's activations are live at once
// during the backward without it; checkpoint attention drops the attention's (math keeps its
// probabilities, L x L per head), checkpoint layer everything but each layer's input.
TEST_F(TorchStack, CheckpointLayerKeepsLessThanAttentionWhichKeepsNoMoreThanNone) {
  for (int64_t n : {2, 3}) {
    std::map<Checkpoint, int64_t> peak;
    for (Checkpoint c : {Checkpoint::none, Checkpoint::attention, Checkpoint::layer}) {
      const WorkloadSpec s = stack(spec(4, 256, 256, 16), n, Pass::train, c);
      const RunResult r = runOnce(mathB, s);
      ASSERT_EQ(r.status, RunStatus::ok) << label(mathB, s, r);
      peak[c] = r.memory.measured_peak;
    }
    std::printf("torch.cpu.math %lld layers, H4 L256 D16 train: peak none %lld, attention %lld, layer %lld\n",
                static_cast<long long>(n), static_cast<long long>(peak[Checkpoint::none]),
                static_cast<long long>(peak[Checkpoint::attention]), static_cast<long long>(peak[Checkpoint::layer]));
    EXPECT_LT(peak[Checkpoint::layer], peak[Checkpoint::attention]);
    EXPECT_LE(peak[Checkpoint::attention], peak[Checkpoint::none]);
  }
}

TEST_F(TorchStack, ForwardWithCheckpointLayerIsRefused) {
  const Support sup = autoB.support(stack(spec(2, 16, 16, 8), 2, Pass::forward, Checkpoint::layer));
  EXPECT_FALSE(sup.ok());
}

}  // namespace
}  // namespace attnscope

int main(int argc, char** argv) { return attnscope::torchtest::realTorchTestMain(argc, argv); }
