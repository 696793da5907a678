// On a GPU: every buffer a CUDA backend plans is allocated under its name with exactly its size
// (plan_buffers.h). Exits 77 (skipped) with the reason when no CUDA device can be used.

#include <cstdio>
#include <memory>

#include "kernels/cuda/cuda_backends.h"
#include "tests/support/plan_buffers.h"

namespace attnscope {
namespace {

TEST(PlanBuffersCuda, EveryPlannedBufferIsAllocatedUnderItsNameWithItsSize) {
  for (auto& backend : makeCudaBackends()) EXPECT_GT(plancheck::expectPlanIsWhatIsAllocated(*backend), 0) << backend->id();
}

}  // namespace
}  // namespace attnscope

int main(int argc, char** argv) {
  auto backends = attnscope::makeCudaBackends();
  const attnscope::Availability a = backends.empty() ? attnscope::Availability{false, "no CUDA backends"}
                                                     : backends.front()->availability();
  if (!a.available) {
    std::fprintf(stderr, "SKIPPED: no usable CUDA device (%s); this test needs one\n", a.reason.c_str());
    return 77;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
