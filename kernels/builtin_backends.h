#pragma once
#include "core/backend/backend_registry.h"

namespace attnscope {
// Registers the CPU backends, in CUDA builds the CUDA backends (listed as unavailable, with the
// CUDA runtime's reason, on machines without a usable GPU; the reason is added as a note), and the
// PyTorch backends (unavailable, with the reason, when the user's Python has no usable torch).
// The body is generated at configure time from each backend folder's attnscope_backend()
// declaration (kernels/CMakeLists.txt), in their ORDER.
void registerBuiltinBackends(BackendRegistry& registry);
}  // namespace attnscope
