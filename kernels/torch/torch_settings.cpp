#include "kernels/torch/torch_settings.h"

#include "core/base/utf8_text.h"
#include "kernels/torch/torch_backends.h"
#include "kernels/torch/torch_prediction.h"
#include "kernels/torch/torch_probe.h"
#include "kernels/torch/torch_python.h"

namespace attnscope::torch {
namespace {

class TorchSettings final : public BackendSettings {
 public:
  void setCommandLinePython(const std::string& command) override { torch::setCommandLinePython(command); }
  void setGuiPython(const std::string& command) override {
    torch::setGuiPython(command);
    TorchProbe::instance().invalidate();
  }
  void setBackgroundChecks(bool on) override { TorchProbe::instance().setBackground(on); }
  void setCancel(const std::atomic<bool>* cancel) override { TorchProbe::instance().setCancel(cancel); }
  void setAvailabilityListener(std::function<void()> listener) override {
    TorchProbe::instance().setListener(std::move(listener));
  }
  void recheck() override { TorchProbe::instance().invalidate(); }
  std::string settingProblem() const override { return torchTimeoutProblem(); }
  std::shared_ptr<void> waitForChecksOnThisThread() override { return std::make_shared<TorchProbe::BlockingScope>(); }
  std::map<std::string, std::string> notes() const override { return {{"torch_mask_passing", torchMaskPassingNote()}}; }
};

}  // namespace

std::unique_ptr<BackendSettings> torchBackendSettings() { return std::make_unique<TorchSettings>(); }

torch_dispatch::InstalledTorch installedTorch() {
  torch_dispatch::InstalledTorch t;
  auto probe = TorchProbe::instance().result();
  if (!probe) {
    t.problem = "the torch probe gave no answer";
    return t;
  }
  t.python = validUtf8(probe->python.path);
  if (!probe->problem.empty() || probe->cancelled) {
    t.problem = !probe->problem.empty() ? probe->problem : "cancelled while " + probe->python.shown() + " imported torch";
    return t;
  }
  const TorchHello& h = probe->hello;
  t.version_text = h.torch_version;
  t.version = installedVersion(h, &t.version_problem);
  t.gpu = detectedGpu(h, &t.gpu_problem);
  t.cpu_threads = h.threads;
  torch_dispatch::TorchTarget build;  // what applyInstalledBuild sets, the one reading of the hello
  build.cuda_major = 0;
  applyInstalledBuild(h, build);
  if (torch_dispatch::parseCudnnVersion(h.torch_cudnn)) t.cudnn = build.cudnn;
  t.cuda_major = build.cuda_major;
  return t;
}

}  // namespace attnscope::torch
