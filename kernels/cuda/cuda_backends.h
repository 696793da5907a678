#pragma once
#include <memory>
#include <vector>

#include "core/backend/backend_registry.h"

namespace attnscope {
// cuda.math, cuda.chunked and cuda.flash, plus the GPU environment probe. Without a usable
// device they are registered as unavailable and a note "GPU backends unavailable: <reason>" is
// added to the registry.
void registerCudaBackends(BackendRegistry& registry);

// The three backends alone (no registry note, no environment probe), for tests and benchmarks.
// cuda.chunked reads ATTNSCOPE_CUDA_CHUNK_ROWS (rows per chunk) when set; otherwise it picks
// the largest chunk whose scores fit in 256 MiB.
std::vector<std::unique_ptr<Backend>> makeCudaBackends();
}  // namespace attnscope
