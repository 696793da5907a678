#pragma once
#include "core/backend_registry.h"

namespace attnscope {
// cuda.math, cuda.chunked and cuda.flash, plus the GPU environment probe. Without a usable
// device they are registered as unavailable and a note "GPU backends unavailable: <reason>" is
// added to the registry.
void registerCudaBackends(BackendRegistry& registry);
}  // namespace attnscope
