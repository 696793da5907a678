#include "kernels/builtin_session.h"

#include "kernels/builtin_backends.h"
#include "kernels/torch/torch_settings.h"
#ifdef ATTNSCOPE_HAVE_CUPTI
#include "core/cupti/cupti_capture.h"
#endif

namespace attnscope {

Session& builtinSession() {
  // Never destroyed, like the CUPTI capture it holds (CUPTI's thread may call back during exit).
  static Session* session = new Session(
      []() -> TraceCapture* {
#ifdef ATTNSCOPE_HAVE_CUPTI
        return &CuptiCapture::start();
#else
        return nullptr;
#endif
      },
      [](BackendRegistry& r) { registerBuiltinBackends(r); });
  return *session;
}

BackendSettings& builtinBackendSettings() {
  // The folders with settings: the torch backends (their Python and their probe). A folder with
  // settings of its own adds them here.
  static BackendSettingsList* all = [] {
    auto* list = new BackendSettingsList;
    list->add(torch::torchBackendSettings());
    return list;
  }();
  return *all;
}

torch_dispatch::InstalledTorch builtinInstalledTorch() { return torch::installedTorch(); }

}  // namespace attnscope
