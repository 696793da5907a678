#pragma once
// The torch backends' settings (core/backend/backend_settings.h) and their answer to explain's
// question about the installed torch (core/torch_dispatch/installed_torch.h), both on the one
// Python resolver (torch_python.h) and the one probe (torch_probe.h) the backends themselves use.

#include <memory>

#include "core/backend/backend_settings.h"
#include "core/torch_dispatch/installed_torch.h"

namespace attnscope::torch {

std::unique_ptr<BackendSettings> torchBackendSettings();
torch_dispatch::InstalledTorch installedTorch();

}  // namespace attnscope::torch
