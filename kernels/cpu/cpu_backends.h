#pragma once
#include "core/backend/backend_registry.h"

namespace attnscope {
// cpu.reference and cpu.flash; also registers the environment probe naming the BLAS.
void registerCpuBackends(BackendRegistry& registry);
}  // namespace attnscope
