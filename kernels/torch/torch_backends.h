#pragma once
#include "core/backend/backend_registry.h"

namespace attnscope {
// torch.cpu.{auto,math,flash} and torch.cuda.{auto,math,efficient,flash,cudnn}: PyTorch's SDPA in
// the user's Python. Always registered; unavailable (with the reason) without a usable torch.
void registerTorchBackends(BackendRegistry& registry);
// How the torch backends pass each mask kind to SDPA, for `backends` and the README.
std::string torchMaskPassingNote();
}  // namespace attnscope
