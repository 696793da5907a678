// pass = train on the torch backends with the real torch of ATTNSCOPE_TEST_PYTHON: autograd's dQ,
// dK, dV against the float64 reference through the run engine (GQA, masks, checkpointing), and
// the measured peak of a train pass above the forward's, and equal to the explainer's train plan
// (out.backward(G) on leaves q, k, v: what autograd saves, the backward's buffers, the gradients'
// copies), except under checkpoint. Exits 77 (skipped) without ATTNSCOPE_TEST_PYTHON.
#include <gtest/gtest.h>

#include <cstdio>

#include "kernels/torch/torch_python.h"
#include "tests/torch/real_torch_test.h"
#include "tests/torch/torch_test_support.h"

namespace attnscope {
namespace {

using namespace torchtest;

WorkloadSpec train(WorkloadSpec s, Checkpoint c = Checkpoint::none) {
  s.pass = Pass::train;
  s.checkpoint = c;
  return s;
}

struct TorchTrain : RealTorchTest {};

TEST_F(TorchTrain, GradientsMatchTheFloat64Reference) {
  WorkloadSpec dense = spec(4, 64, 80, 8, "dense:0.5", 2);
  dense.mask_layout = MaskLayout::per_head;
  // An additive mask (fp32, per head) on bf16 inputs: the bias is a constant of the backward.
  WorkloadSpec additive = spec(4, 64, 80, 8, "additive:0.5", 2, DType::bf16);
  additive.mask_layout = MaskLayout::per_head;
  additive.mask_dtype = DType::fp32;
  const std::vector<WorkloadSpec> specs = {train(spec(2, 97, 97, 59)), train(spec(4, 64, 64, 16, "causal", 2)),
                                           train(spec(2, 33, 97, 16, "window:8")), train(dense),
                                           train(spec(2, 97, 97, 16, "causal"), Checkpoint::attention),
                                           train(additive), train(spec(2, 40, 50, 16, "additive")),
                                           train(spec(1, 33, 33, 320))};
  for (torch::TorchBackend* b : {&autoB, &mathB})
    for (const WorkloadSpec& s : specs) {
      RunResult r = runOnce(*b, s);
      SCOPED_TRACE(b->id() + " " + summary(s) + " checkpoint " + std::string(toString(s.checkpoint)) + ": " + r.message);
      ASSERT_EQ(r.status, RunStatus::ok);
      EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error;
      if (s.checkpoint == Checkpoint::none) {
        const int64_t diff = expectPeakAsPredicted(r, s, 1024);
        std::printf("%-16s %-40s train: predicted %10lld measured %10lld (diff %+lld B)\n", b->id().c_str(),
                    summary(s).c_str(), static_cast<long long>(r.memory.predicted_peak),
                    static_cast<long long>(r.memory.measured_peak), static_cast<long long>(diff));
      } else {
        EXPECT_FALSE(r.plan.known);  // torch.utils.checkpoint's memory is measured only
        EXPECT_NE(r.plan.unknown_reason.find("checkpoint"), std::string::npos) << r.plan.unknown_reason;
      }
      EXPECT_GT(r.memory.measured_peak, r.memory.io_bytes / 2);
    }
}

TEST_F(TorchTrain, TrainPeakIsAboveTheForwardPeak) {
  const WorkloadSpec fwd = spec(4, 256, 256, 64);
  const RunResult f = runOnce(mathB, fwd), t = runOnce(mathB, train(fwd));
  ASSERT_EQ(f.status, RunStatus::ok) << f.message;
  ASSERT_EQ(t.status, RunStatus::ok) << t.message;
  std::printf("torch.cpu.math %s: forward peak %lld, train peak %lld\n", summary(fwd).c_str(),
              static_cast<long long>(f.memory.measured_peak), static_cast<long long>(t.memory.measured_peak));
  // At least G and the three gradients on top of the forward's inputs and output.
  EXPECT_GE(t.memory.measured_peak, f.memory.measured_peak + 4 * fwd.qElements() * 4);
}

}  // namespace
}  // namespace attnscope

int main(int argc, char** argv) { return attnscope::torchtest::realTorchTestMain(argc, argv); }
