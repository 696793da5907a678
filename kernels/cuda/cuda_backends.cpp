#include "kernels/cuda/cuda_backends.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include "core/result/environment.h"
#include "kernels/cuda/cuda_device.h"
#include "kernels/cuda/cuda_flash_backend.h"
#include "kernels/cuda/cuda_math_backend.h"

namespace attnscope {
namespace {

int64_t chunkRowsFromEnvironment() {
  const char* text = std::getenv("ATTNSCOPE_CUDA_CHUNK_ROWS");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  return end && *end == '\0' && v > 0 ? v : 0;
}

}  // namespace

std::vector<std::unique_ptr<Backend>> makeCudaBackends() {
  std::vector<std::unique_ptr<Backend>> out;
  out.push_back(std::make_unique<cuda::CudaMathBackend>(false));
  out.push_back(std::make_unique<cuda::CudaMathBackend>(true, chunkRowsFromEnvironment()));
  out.push_back(std::make_unique<cuda::CudaFlashBackend>());
  return out;
}

void registerCudaBackends(BackendRegistry& registry) {
  static std::once_flag probe_once;
  std::call_once(probe_once, [] { addEnvironmentProbe(&cuda::fillCudaEnvironment); });
  for (auto& b : makeCudaBackends()) registry.add(std::move(b));
  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (!info.available) registry.addNote("GPU backends unavailable: " + info.reason);
}

}  // namespace attnscope
