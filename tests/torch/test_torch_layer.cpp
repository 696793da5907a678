// kind = layer on the torch backends with the real torch of ATTNSCOPE_TEST_PYTHON: torch's own
// F.linear + SDPA + F.linear (train: y.backward(G) through autograd) run through the real engine,
// y and every gradient held against the float64 layer check (core/check/reference_layer.h) like the CPU
// backends'; a planted error in torch's y or in one gradient fails that check; the phases come
// from the worker's profiled call; memory is measured (autograd's saved tensors included) and,
// for the forward and the flash backward without checkpointing, predicted as well (the plan of
// predictTorchLayer held against it). Exits 77 (skipped) without ATTNSCOPE_TEST_PYTHON.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "kernels/torch/torch_python.h"
#include "tests/torch/real_torch_test.h"
#include "tests/support/corrupting_backend.h"
#include "tests/torch/torch_test_support.h"

namespace attnscope {
namespace {

using namespace torchtest;

WorkloadSpec layer(WorkloadSpec s, Pass pass = Pass::forward, Checkpoint c = Checkpoint::none, int64_t width = 0) {
  s.kind = WorkloadKind::layer;
  s.pass = pass;
  s.checkpoint = c;
  s.width = width;
  return s;
}

std::set<std::string> phaseNames(const RunResult& r) {
  std::set<std::string> names;
  for (const TraceEvent& e : r.trace.events)
    if (e.kind == EventKind::phase) names.insert(e.name);
  return names;
}

// The phase called `name`, nested (by time) inside the one called `parent`.
bool nestedIn(const RunResult& r, const std::string& name, const std::string& parent) {
  for (const TraceEvent& in : r.trace.events)
    if (in.kind == EventKind::phase && in.name == name)
      for (const TraceEvent& out : r.trace.events)
        if (out.kind == EventKind::phase && out.name == parent && out.start_ns <= in.start_ns && in.end_ns <= out.end_ns)
          return true;
  return false;
}

struct TorchLayer : RealTorchTest {};

TEST_F(TorchLayer, ForwardAndTrainMatchTheFloat64Check) {
  WorkloadSpec dense = spec(4, 48, 48, 8, "dense:0.5", 2);
  dense.mask_layout = MaskLayout::per_head;
  const std::vector<WorkloadSpec> specs = {
      layer(spec(2, 37, 37, 16)),                                                    // forward
      layer(spec(4, 40, 40, 16, "causal", 2), Pass::forward, Checkpoint::none, 48),  // GQA, E from width
      layer(spec(2, 37, 37, 16), Pass::train),
      layer(spec(4, 40, 40, 16, "causal", 2), Pass::train, Checkpoint::none, 48),
      layer(spec(4, 40, 40, 16, "causal", 2), Pass::train, Checkpoint::attention, 48),
      layer(dense, Pass::train, Checkpoint::attention),
      layer(spec(2, 33, 33, 16, "window:8", 0, DType::bf16), Pass::train),
      layer(spec(4, 32, 32, 16, "causal", 1, DType::bf16), Pass::train, Checkpoint::attention, 96),
  };
  for (torch::TorchBackend* b : {&autoB, &mathB})
    for (const WorkloadSpec& s : specs) {
      RunResult r = runOnce(*b, s);
      SCOPED_TRACE(b->id() + " " + summary(s) + " E " + std::to_string(layerWidth(s)) + " " +
                   std::string(toString(s.pass)) + " checkpoint " + std::string(toString(s.checkpoint)) + ": " + r.message);
      ASSERT_EQ(r.status, RunStatus::ok);
      EXPECT_TRUE(r.accuracy.checked);
      EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
      // Predicted (predictTorchLayer), here on odd shapes, GQA, a width, a window mask: the
      // forward, and the backward through the flash kernel without checkpointing; the rest is
      // measured only, with the reason.
      const bool predicted = s.pass == Pass::forward || (s.checkpoint == Checkpoint::none && r.facts["torch.ran"] == "flash");
      if (predicted) {
        expectPeakAsPredicted(r, s, 64 * 1024);
      } else {
        EXPECT_FALSE(r.plan.known);
        EXPECT_NE(r.plan.unknown_reason.find("measured only"), std::string::npos) << r.plan.unknown_reason;
      }
      EXPECT_GT(r.memory.measured_peak, 0);
      if (b->kernel() != "auto") {
        EXPECT_EQ(r.facts["torch.ran"], b->kernel());
      }
      const std::set<std::string> phases = phaseNames(r);
      for (const char* p : {"qkv_proj", "attention", "out_proj"}) EXPECT_TRUE(phases.count(p)) << p;
      // Top-level, so that a sweep's phase columns line up with the CPU backends', and on the CPU
      // from the timed call as well as the profiled one (runOnce: no warm-up, one repetition).
      EXPECT_FALSE(phases.count("profiled call"));
      EXPECT_FALSE(phases.count("layer call"));
      EXPECT_EQ(std::count_if(r.trace.events.begin(), r.trace.events.end(),
                              [](const TraceEvent& e) { return e.kind == EventKind::phase && e.name == "out_proj"; }),
                2);
      const bool train = s.pass == Pass::train;
      for (const char* p : {"out_proj_backward", "attention_backward", "qkv_proj_backward"})
        EXPECT_EQ(phases.count(p), train ? 1u : 0u) << p;
      if (train) {
        // The backward's three phases follow each other without overlap (their boundaries are
        // the gradient hooks), so none is counted twice in the phase breakdown.
        auto range = [&](const char* name) {
          for (const TraceEvent& e : r.trace.events)
            if (e.kind == EventKind::phase && e.name == name) return std::pair{e.start_ns, e.end_ns};
          return std::pair<int64_t, int64_t>{0, -1};
        };
        const auto out = range("out_proj_backward"), att = range("attention_backward"), qkv = range("qkv_proj_backward");
        EXPECT_LT(out.first, out.second);
        EXPECT_LE(out.second, att.first);
        EXPECT_LT(att.first, att.second);
        EXPECT_LE(att.second, qkv.first);
        EXPECT_LE(qkv.first, qkv.second);
      }
      // torch.utils.checkpoint runs the attention again inside its backward.
      EXPECT_EQ(nestedIn(r, "recompute", "attention_backward"), s.checkpoint == Checkpoint::attention);
    }
}

// The memory a train pass measures includes what autograd keeps: G and the five gradients are
// live at its end on top of everything the forward holds.
TEST_F(TorchLayer, TrainPeakIncludesTheGradients) {
  const WorkloadSpec fwd = layer(spec(4, 128, 128, 32), Pass::forward, Checkpoint::none, 192);
  WorkloadSpec trn = fwd;
  trn.pass = Pass::train;
  const RunResult f = runOnce(mathB, fwd), t = runOnce(mathB, trn);
  ASSERT_EQ(f.status, RunStatus::ok) << f.message;
  ASSERT_EQ(t.status, RunStatus::ok) << t.message;
  const int64_t e = layerWidth(fwd), rows = layerQkvRows(fwd), hd = fwd.heads * fwd.headDim();
  const int64_t g = fwd.batch * fwd.seq_q * e * 4;
  const int64_t grads = g + (rows * e + rows + e * hd + e) * 4;  // dx (G's size) and the weights' gradients
  std::printf("torch.cpu.math layer %s E %lld: forward peak %lld, train peak %lld\n", summary(fwd).c_str(),
              static_cast<long long>(e), static_cast<long long>(f.memory.measured_peak),
              static_cast<long long>(t.memory.measured_peak));
  EXPECT_GE(t.memory.measured_peak, f.memory.measured_peak + g);
  // Inputs, G, y and the gradients are all live when the backward ends.
  const int64_t inputs = (fwd.batch * fwd.seq_q * e + rows * e + rows + e * hd + e) * 4;
  EXPECT_GE(t.memory.measured_peak, inputs + g + g + grads);
  // The profiler's allocations are the trace's memory curve.
  EXPECT_TRUE(std::any_of(t.trace.events.begin(), t.trace.events.end(),
                          [](const TraceEvent& ev) { return ev.kind == EventKind::alloc && ev.name == "w_qkv"; }));
}

// A backend whose results are torch's with one value changed: the layer check must fail it.
enum class Plant { y, dw_qkv, dx };

testing::CorruptingBackend planted(Backend& inner, Plant plant) {
  return testing::CorruptingBackend(inner, [plant](testing::Results r) {
    if (r.out && plant == Plant::y) (*r.out)[r.out->size() / 2] += 0.5f;
    if (r.layer && plant == Plant::dw_qkv) r.layer->dw_qkv[r.layer->dw_qkv.size() - 1] += 0.5f;
    if (r.layer && plant == Plant::dx) r.layer->dx[0] -= 0.5f;
  });
}

TEST_F(TorchLayer, APlantedErrorFailsTheCheck) {
  const WorkloadSpec s = layer(spec(4, 24, 24, 8, "causal", 2), Pass::train, Checkpoint::none, 40);
  for (Plant p : {Plant::y, Plant::dw_qkv, Plant::dx}) {
    testing::CorruptingBackend bad = planted(autoB, p);
    const RunResult r = runOnce(bad, s);
    SCOPED_TRACE(r.message);
    EXPECT_EQ(r.status, RunStatus::wrong);
    EXPECT_FALSE(r.accuracy.passed());
  }
  // The same runs unplanted pass: the failures above are the planted values.
  const RunResult clean = runOnce(autoB, s);
  EXPECT_EQ(clean.status, RunStatus::ok) << clean.message;
}

// Past the engine's traced passes, the timed calls' phases are counted and dropped like any
// backend's, so a long run's trace stays bounded.
TEST_F(TorchLayer, PhasesOfUntracedPassesAreDropped) {
  const WorkloadSpec s = layer(spec(2, 16, 16, 8), Pass::train);
  const RunResult r = runOnce(autoB, s, nullptr, kTracedPasses + 2);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(std::count_if(r.trace.events.begin(), r.trace.events.end(),
                          [](const TraceEvent& e) { return e.kind == EventKind::phase && e.name == "qkv_proj"; }),
            kTracedPasses + 1);  // the traced timed calls and the profiled one
  EXPECT_NE(r.message.find("events of the other passes dropped"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find(" 0 events of the other passes dropped"), std::string::npos) << r.message;
}

TEST_F(TorchLayer, CheckpointWithAForwardPassIsRefused) {
  const Support sup = autoB.support(layer(spec(2, 16, 16, 8), Pass::forward, Checkpoint::attention));
  ASSERT_FALSE(sup.ok());
  EXPECT_NE(sup.reasons.front().find("needs pass train"), std::string::npos);
}

}  // namespace
}  // namespace attnscope

int main(int argc, char** argv) { return attnscope::torchtest::realTorchTestMain(argc, argv); }
