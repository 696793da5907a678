#include "kernels/torch/torch_backends.h"

#include "kernels/torch/torch_backend.h"
#include "kernels/torch/torch_files.h"

namespace attnscope {

void registerTorchBackends(BackendRegistry& registry) {
  auto session = std::make_shared<torch::TorchSession>();
  for (const char* k : {"auto", "math", "flash"}) registry.add(std::make_unique<torch::TorchBackend>("cpu", k, session));
  for (const char* k : {"auto", "math", "efficient", "flash", "cudnn"})
    registry.add(std::make_unique<torch::TorchBackend>("cuda", k, session));
}

std::string torchMaskPassingNote() { return torch::maskPassingNote(); }

}  // namespace attnscope
