// Stacks of layers (layers = N, kind layer) on the CPU backends: every planned buffer is allocated
// under its name (L<n>.q ...) at its size and the planned peak is the measured one, for N = 1..4,
// forward and train with every checkpoint; a stack is its layers chained (the same result, bit for
// bit, as single-layer runs fed each other's outputs and gradients); the float64 check holds each
// layer, and names the layer of a planted error; and what checkpointing buys across a stack, as
// measured: layer < attention <= none.

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "core/check/reference.h"
#include "core/check/reference_layer.h"
#include "core/engine/run_engine.h"
#include "tests/cpu/cpu_test_support.h"
#include "tests/support/corrupting_backend.h"
#include "tests/support/plan_buffers.h"

namespace attnscope {
namespace {

const std::pair<Pass, Checkpoint> kModes[] = {{Pass::forward, Checkpoint::none},
                                              {Pass::train, Checkpoint::none},
                                              {Pass::train, Checkpoint::attention},
                                              {Pass::train, Checkpoint::layer}};

WorkloadSpec stackSpec(int64_t layers, Pass pass, Checkpoint checkpoint, DType dtype = DType::fp32,
                       const char* mask = "causal") {
  WorkloadSpec s = cputest::specOf({1, 4, 2, 37, 0, 8, dtype, mask, MaskLayout::broadcast, 5});
  s.kind = WorkloadKind::layer;
  s.layers = layers;
  s.pass = pass;
  s.checkpoint = checkpoint;
  return s;
}

std::string where(const Backend& b, const WorkloadSpec& s) {
  return b.id() + " " + summary(s) + " checkpoint " + std::string(toString(s.checkpoint));
}

TEST(CpuLayerStack, PlanIsWhatIsAllocatedAndPeakIsMeasured) {
  for (auto& b : cputest::cpuBackends(2)) {
    for (int64_t n = 1; n <= 4; ++n)
      for (const auto& [pass, checkpoint] : kModes)
        for (DType dtype : {DType::fp32, DType::bf16}) {
          const WorkloadSpec s = stackSpec(n, pass, checkpoint, dtype, n % 2 ? "dense:0.5" : "causal");
          ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
          ASSERT_TRUE(b->support(s).ok()) << where(*b, s);
          EXPECT_TRUE(plancheck::expectPlanIsWhatIsAllocated(*b, s)) << where(*b, s);
          RunOptions opt;
          opt.warmup = 1;
          opt.reps = 1;
          const RunResult r = runPoint(*b, s, opt);
          ASSERT_EQ(r.status, RunStatus::ok) << where(*b, s) << ": " << r.message;
          EXPECT_EQ(r.memory.measured_peak, r.memory.predicted_peak) << where(*b, s);
          EXPECT_EQ(r.plan.ioBytes(), r.memory.io_bytes) << where(*b, s);
          EXPECT_TRUE(r.accuracy.passed()) << where(*b, s);
          // Each layer's buffers carry its number; a single layer's none.
          std::set<std::string> names;
          for (const PlannedBuffer& pb : r.plan.buffers) names.insert(pb.name);
          for (int64_t l = 1; l <= n; ++l) {
            const std::string at = n > 1 ? "L" + std::to_string(l) + "." : "";
            EXPECT_TRUE(names.count(at + "w_qkv")) << where(*b, s) << " layer " << l;
            EXPECT_TRUE(names.count(at + "q")) << where(*b, s) << " layer " << l;
          }
        }
  }
}

// Phases nest per layer: L2/qkv_proj, and the recompute of checkpoint layer inside L2.
TEST(CpuLayerStack, PhasesNestPerLayer) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec s = stackSpec(3, Pass::train, Checkpoint::layer);
  RunOptions opt;
  opt.reps = 1;
  const RunResult r = runPoint(*backends[1], s, opt);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  // Paths from the nesting of the phase events (each inside the last open one that contains it).
  std::vector<const TraceEvent*> open;
  std::set<std::string> paths;
  std::vector<std::string> names;
  for (const TraceEvent& e : r.trace.events) {
    if (e.kind != EventKind::phase) continue;
    while (!open.empty() && !(open.back()->start_ns <= e.start_ns && e.end_ns <= open.back()->end_ns)) {
      open.pop_back();
      names.pop_back();
    }
    std::string path;
    for (const std::string& n : names) path += n + "/";
    paths.insert(path + e.name);
    open.push_back(&e);
    names.push_back(e.name);
  }
  for (const char* p : {"L1/qkv_proj", "L3/out_proj", "L2/recompute/qkv_proj", "L2/recompute/attention",
                        "L1/out_proj_backward/dO", "L3/qkv_proj_backward/dw_qkv"})
    EXPECT_TRUE(paths.count(p)) << p;
}

HostTensor asTensor(DType dtype, const std::vector<float>& v, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.elements(); ++i) t.set(i, v[static_cast<size_t>(i)]);
  return t;
}

struct Outcome {
  std::vector<float> y;
  std::vector<LayerGradients> grads;
};
Outcome runOn(Backend& b, const WorkloadSpec& s, const HostInputs& in) {
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.inputs = &in;
  Outcome o;
  opt.output = &o.y;
  opt.layer_gradients = &o.grads;
  const RunResult r = runPoint(b, s, opt);
  EXPECT_EQ(r.status, RunStatus::ok) << where(b, s) << ": " << r.message;
  return o;
}

// A stack of three is three single layers chained: forward y1 -> layer 2 -> y2 -> layer 3, and
// backward G -> layer 3 -> dx3 -> layer 2 -> dx2 -> layer 1, each on its own weights. Bit for bit:
// the same kernels on the same sizes.
TEST(CpuLayerStack, AStackIsItsLayersChained) {
  for (auto& b : cputest::cpuBackends(2))
    for (Checkpoint checkpoint : {Checkpoint::none, Checkpoint::layer})
      for (DType dtype : {DType::fp32, DType::fp16}) {
        const WorkloadSpec stack = stackSpec(3, Pass::train, checkpoint, dtype);
        const HostInputs in = HostInputs::generate(stack);
        ASSERT_EQ(in.deeper.size(), 2u);
        const Outcome whole = runOn(*b, stack, in);
        ASSERT_EQ(whole.grads.size(), 3u) << where(*b, stack);
        WorkloadSpec one = stack;
        one.layers = 1;
        one.checkpoint = Checkpoint::none;
        const std::vector<int64_t> xs{one.batch, one.seq_q, layerWidth(one)};
        std::vector<HostInputs> layer(3);
        std::vector<float> x = [&] {
          std::vector<float> v(static_cast<size_t>(in.x.elements()));
          for (int64_t i = 0; i < in.x.elements(); ++i) v[static_cast<size_t>(i)] = in.x.at(i);
          return v;
        }();
        // Forward, layer by layer, with a dummy G (gradients come in the second sweep).
        for (int l = 0; l < 3; ++l) {
          const HostInputs::WeightsOf w = in.weights(l);
          layer[l].x = asTensor(dtype, x, xs);
          layer[l].w_qkv = *w.w_qkv;
          layer[l].b_qkv = *w.b_qkv;
          layer[l].w_o = *w.w_o;
          layer[l].b_o = *w.b_o;
          layer[l].g = in.g;
          WorkloadSpec fwd = one;
          fwd.pass = Pass::forward;
          x = runOn(*b, fwd, layer[l]).y;
        }
        EXPECT_EQ(x, whole.y) << where(*b, stack) << ": the stack's y is not layer 3's";
        HostTensor g = in.g;
        for (int l = 2; l >= 0; --l) {
          layer[l].g = g;
          const Outcome o = runOn(*b, one, layer[l]);
          ASSERT_EQ(o.grads.size(), 1u);
          const LayerGradients& got = whole.grads[static_cast<size_t>(l)];
          EXPECT_EQ(o.grads[0].dx, got.dx) << where(*b, stack) << " layer " << l + 1 << " dx";
          EXPECT_EQ(o.grads[0].dw_qkv, got.dw_qkv) << where(*b, stack) << " layer " << l + 1 << " dw_qkv";
          EXPECT_EQ(o.grads[0].db_o, got.db_o) << where(*b, stack) << " layer " << l + 1 << " db_o";
          g = asTensor(dtype, o.grads[0].dx, xs);
        }
      }
}

// A wrong element in layer 3's dw_qkv (or dw_o, or layer 1's dx) fails the run, naming the layer.
TEST(CpuLayerStack, APlantedErrorInOneLayerFailsNamingIt) {
  auto backends = cputest::cpuBackends(2);
  const WorkloadSpec s = stackSpec(4, Pass::train, Checkpoint::attention);
  struct Plant {
    int layer;
    std::vector<float> LayerGradients::*member;
    const char* name;
  };
  for (const Plant& plant : {Plant{3, &LayerGradients::dw_qkv, "dw_qkv"}, Plant{3, &LayerGradients::dw_o, "dw_o"},
                             Plant{1, &LayerGradients::dx, "dx"}, Plant{2, &LayerGradients::db_qkv, "db_qkv"}}) {
    int seen = 0;
    testing::CorruptingBackend bad(*backends[1], [&](testing::Results r) {
      if (!r.layer) return;
      if (++seen != plant.layer) return;
      std::vector<float>& t = r.layer->*plant.member;
      t[t.size() / 2] += 0.5f;
    });
    RunOptions opt;
    opt.reps = 1;
    const RunResult r = runPoint(bad, s, opt);
    EXPECT_EQ(r.status, RunStatus::wrong) << plant.name << " of layer " << plant.layer << ": " << r.message;
    EXPECT_NE(r.message.find("layer " + std::to_string(plant.layer) + ":"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find(plant.name), std::string::npos) << r.message;
  }
  // Unplanted, the same stack passes.
  RunOptions opt;
  opt.reps = 1;
  const RunResult good = runPoint(*backends[1], s, opt);
  EXPECT_EQ(good.status, RunStatus::ok) << good.message;
  EXPECT_TRUE(good.accuracy.passed());
}

// What checkpointing buys across a stack, measured: at N >= 2, checkpoint layer keeps only each
// layer's input and holds the least; checkpoint attention frees cpu.reference's P (and nothing
// for cpu.flash, which keeps only lse), so attention <= none.
TEST(CpuLayerStack, CheckpointingOrdersThePeakAcrossAStack) {
  for (auto& b : cputest::cpuBackends(2))
    for (int64_t n : {2, 4}) {
      int64_t peak[3] = {0, 0, 0};
      const Checkpoint modes[] = {Checkpoint::none, Checkpoint::attention, Checkpoint::layer};
      for (int m = 0; m < 3; ++m) {
        // Activations larger than the tiles' scratch (at head_dim 8, cpu.flash's recompute scratch
        // outweighs its dq, dk, dv, and checkpoint attention costs it a little: measured).
        WorkloadSpec s = stackSpec(n, Pass::train, modes[m]);
        s.seq_q = 256;
        s.head_dim = 32;
        RunOptions opt;
        opt.reps = 1;
        opt.warmup = 0;
        const RunResult r = runPoint(*b, s, opt);
        ASSERT_EQ(r.status, RunStatus::ok) << where(*b, s) << ": " << r.message;
        peak[m] = r.memory.measured_peak;
      }
      EXPECT_LT(peak[2], peak[1]) << b->id() << " layers " << n;
      EXPECT_LE(peak[1], peak[0]) << b->id() << " layers " << n;
      if (b->id() == "cpu.reference") {
        EXPECT_LT(peak[1], peak[0]) << "P is freed by checkpoint attention";
      }
    }
}

// The spec's rules for the new fields, as the CPU backends see them.
TEST(CpuLayerStack, SupportSaysWhatIsRefused) {
  for (auto& b : cputest::cpuBackends(1)) {
    WorkloadSpec s = stackSpec(2, Pass::train, Checkpoint::layer);
    EXPECT_TRUE(b->support(s).ok()) << b->id();
    s.tp = 2;
    ASSERT_FALSE(b->support(s).ok());
    EXPECT_NE(b->support(s).reasons.front().find("torch backends"), std::string::npos);
    WorkloadSpec a;
    a.layers = 2;
    ASSERT_FALSE(validate(a).empty());
    EXPECT_EQ(validate(a).front().field, "layers");
  }
}

}  // namespace
}  // namespace attnscope
