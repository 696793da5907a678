#include "kernels/cpu/cpu_backends.h"

#include <memory>

#include "core/result/environment.h"
#include "kernels/cpu/tile_kernels.h"
#include "kernels/cpu/cpu_flash_backend.h"
#include "kernels/cpu/cpu_reference_backend.h"

namespace attnscope {

void registerCpuBackends(BackendRegistry& registry) {
  // One pool for both: runs are sequential, and two pools would double the idle threads.
  auto pool = std::make_shared<cpu::TaskPool>();
  registry.add(std::make_unique<cpu::CpuReferenceBackend>(pool));
  registry.add(std::make_unique<cpu::CpuFlashBackend>(pool));
  static const bool probe_added = [] {
    addEnvironmentProbe([](Environment& env) { env.blas = cpu::cpuKernelDescription(); });
    return true;
  }();
  (void)probe_added;
}

}  // namespace attnscope
