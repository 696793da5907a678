// Every buffer a CPU backend plans is allocated under its name with exactly its size, for every
// dtype and mask layout (plan_buffers.h says why the peaks alone are not enough).

#include "core/backend/backend_registry.h"
#include "kernels/cpu/cpu_backends.h"
#include "tests/support/plan_buffers.h"

namespace attnscope {
namespace {

TEST(PlanBuffers, EveryPlannedBufferIsAllocatedUnderItsNameWithItsSize) {
  BackendRegistry registry;
  registerCpuBackends(registry);
  int backends = 0;
  for (Backend* backend : registry.all()) {
    if (backend->id().rfind("cpu.", 0) != 0) continue;
    ++backends;
    // 3 dtypes x 4 masks x 3 passes (forward, train, train with checkpoint).
    EXPECT_EQ(plancheck::expectPlanIsWhatIsAllocated(*backend), 36) << backend->id() << ": points checked";
  }
  EXPECT_GE(backends, 2);
}

}  // namespace
}  // namespace attnscope
