// registerCpuBackends: both backends in the registry, and the environment names the kernels
// that ran (variant and CPU features).

#include <gtest/gtest.h>

#include "core/result/environment.h"
#include "kernels/cpu/cpu_backends.h"
#include "kernels/cpu/tile_kernels.h"

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
  EXPECT_EQ(env.blas.rfind("cpu kernels: ", 0), 0u) << env.blas;
  EXPECT_NE(env.blas.find(cpu::activeTileKernels().name), std::string::npos) << env.blas;
  EXPECT_NE(env.blas.find("(own"), std::string::npos) << env.blas;
}

}  // namespace
}  // namespace attnscope
