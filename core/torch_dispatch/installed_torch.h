#pragma once
// The torch of the Python that the torch backends use, as `explain --torch installed` and
// `--gpu detected` need it. The torch backends answer (kernels/builtin_session.h,
// builtinInstalledTorch()), so explain and the backends cannot ask different Pythons.

#include <optional>
#include <string>

#include "core/torch_dispatch/torch_target.h"

namespace attnscope::torch_dispatch {

struct InstalledTorch {
  std::string problem;        // no answer at all (no Python, no torch, a cancelled check): why
  std::string python;         // the interpreter asked, printable
  std::string version_text;   // as torch says it: "2.5.1+cu121"
  std::optional<TorchVersion> version;  // nullopt: version_problem says why (a release without rules)
  std::string version_problem;
  std::optional<ParsedGpu> gpu;         // the first CUDA device torch sees; nullopt: gpu_problem says why
  std::string gpu_problem;
  int cpu_threads = 0;                  // torch.get_num_threads(); 0 when unknown
  std::optional<CudnnVersion> cudnn;    // what this torch was built with and loads, where it says
  int cuda_major = 0;                   // 0 when unknown (a CPU build)
};

}  // namespace attnscope::torch_dispatch
