#include "kernels/cpu/cpu_backends.h"

namespace attnscope {
void registerCpuBackends(BackendRegistry&) {}
}  // namespace attnscope
