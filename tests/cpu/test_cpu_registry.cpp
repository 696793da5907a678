// registerCpuBackends: both backends in the registry, and the environment names the BLAS.

#include <gtest/gtest.h>

#include "core/environment.h"
#include "kernels/cpu/cpu_backends.h"

namespace attnscope {
namespace {

TEST(CpuRegistry, RegistersBothBackendsAndTheBlasProbe) {
  BackendRegistry registry;
  registerCpuBackends(registry);
  ASSERT_NE(registry.find("cpu.reference"), nullptr);
  ASSERT_NE(registry.find("cpu.flash"), nullptr);
  EXPECT_EQ(registry.find("cpu.flash")->device(), "cpu");
  // Registering twice (a second registry) must not add the probe twice or break anything.
  BackendRegistry again;
  registerCpuBackends(again);
  EXPECT_EQ(again.ids(), registry.ids());
  const Environment env = captureEnvironment();
  EXPECT_FALSE(env.blas.empty());
#ifdef ATTNSCOPE_EXPECT_OPENBLAS
  EXPECT_NE(env.blas.find("OpenBLAS"), std::string::npos) << env.blas;
#endif
}

}  // namespace
}  // namespace attnscope
