#include "kernels/builtin_session.h"

#include "kernels/builtin_backends.h"
#include "kernels/torch/torch_python.h"
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

RecorderPython builtinRecorderPython() {
  RecorderPython out;
  const torch::PythonChoice p = torch::choosePython();
  out.python = p.path;
  out.shown = p.shown();
  out.source = p.source;
  std::string searched;
  if (auto script = torch::recorderScript(&searched)) out.script = *script;
  if (!p.problem.empty()) out.problem = p.problem;
  else if (out.script.empty()) out.problem = "attnscope_record.py was not found (looked in " + searched + ")";
  return out;
}

}  // namespace attnscope
