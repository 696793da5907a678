#include <gtest/gtest.h>
#include "core/torch_dispatch/sdpa_explain.h"
using namespace attnscope;
using namespace attnscope::torch_dispatch;
TEST(Smoke, Cliff) {
  WorkloadSpec s; s.width = 64; s.heads = 8; s.seq_q = 10000; s.dtype = DType::fp16; s.mask = MaskSpec{MaskKind::dense};
  auto t = defaultTorchTarget(kNewestTorch, TorchDevice::cuda, {8, 0});
  auto a = explainSdpa(s, t);
  s.heads = 16;
  auto b = explainSdpa(s, t);
  ASSERT_TRUE(a.chosen && b.chosen);
  EXPECT_EQ(*a.chosen, SdpaKernel::efficient);
  EXPECT_EQ(*b.chosen, SdpaKernel::math);
  EXPECT_GT(b.peakBytes(), 10 * a.peakBytes());
}
