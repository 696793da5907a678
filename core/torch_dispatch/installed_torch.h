#pragma once
// What the user's Python has: torch's version, its CUDA and cuDNN versions, the CUDA device torch
// sees and its thread count. Used by `attnscope explain --torch installed` and `--gpu detected`.
// One short python3 process; nothing is imported into AttnScope.

#include <optional>
#include <string>

#include "core/torch_dispatch/torch_target.h"

namespace attnscope::torch_dispatch {

// The Python to ask, in the order the issue fixes: --python PATH, $ATTNSCOPE_PYTHON, python3 on
// PATH. `explicit_path` is the --python value (empty if not given). Returns "" if none is found.
std::string findPython(const std::string& explicit_path);

struct InstalledTorch {
  std::string python;         // the interpreter asked
  std::string version_text;   // torch.__version__, e.g. "2.15.0+cu132"
  std::optional<TorchVersion> version;
  std::optional<int> cuda_major;  // torch.version.cuda; nullopt for CPU builds
  std::optional<CudnnVersion> cudnn;
  bool cuda_device = false;   // torch.cuda.is_available()
  ComputeCapability capability;
  std::string device_name;
  int threads = 1;            // torch.get_num_threads()
  std::string error;          // non-empty: no Python, no torch, or the probe failed (its stderr)
};

InstalledTorch probeInstalledTorch(const std::string& python);

}  // namespace attnscope::torch_dispatch
