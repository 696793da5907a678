#include "kernels/builtin_backends.h"

#include "kernels/cpu/cpu_backends.h"
#include "kernels/torch/torch_backends.h"
#ifdef ATTNSCOPE_HAVE_CUDA
#include "kernels/cuda/cuda_backends.h"
#endif

namespace attnscope {

void registerBuiltinBackends(BackendRegistry& registry) {
  registerCpuBackends(registry);
#ifdef ATTNSCOPE_HAVE_CUDA
  registerCudaBackends(registry);
#endif
  registerTorchBackends(registry);
}

}  // namespace attnscope
