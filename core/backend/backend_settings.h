#pragma once
// Settings that reach the backends from a front end without the front end naming a backend: the
// Python the out-of-process backends run in, whether availability is found out in the background,
// a cancel flag for a check in progress, a listener for "availability changed". A backend folder
// that has such settings implements BackendSettings; kernels/builtin_session.h gathers them into
// one (builtinBackendSettings()) that the CLI and the GUI call. Backends without settings need
// nothing: every method defaults to doing nothing.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnscope {

class BackendSettings {
 public:
  virtual ~BackendSettings() = default;
  // The command line's --python (empty: none given). Wins over the window's setting.
  virtual void setCommandLinePython(const std::string&) {}
  // The window's Python setting (empty: none); forgets what was known about the previous one.
  virtual void setGuiPython(const std::string&) {}
  // On (the window): availability is found out on a thread and never waited for, and the listener
  // is told when it changes. Off (the CLI, tests): the first question waits for the answer.
  virtual void setBackgroundChecks(bool) {}
  // A check in progress (importing torch takes seconds) gives up when the flag is set (Ctrl-C).
  virtual void setCancel(const std::atomic<bool>*) {}
  // Called from any thread when a background check changed what availability() says.
  virtual void setAvailabilityListener(std::function<void()>) {}
  // Forget what is known about availability; the next question checks again.
  virtual void recheck() {}
  // Why a setting taken from the environment cannot be used, naming it and its allowed values
  // (a front end refuses to start: the CLI exits 2); "" when all are fine.
  virtual std::string settingProblem() const { return {}; }
  // While the returned object lives, this thread waits for availability checks even in the
  // background mode: for a sweep's worker thread, which must know before it runs a point.
  virtual std::shared_ptr<void> waitForChecksOnThisThread() { return nullptr; }
  // What the backends listing says about the folder's backends as a whole, by a key for JSON
  // (the torch backends: "torch_mask_passing", how a mask reaches torch).
  virtual std::map<std::string, std::string> notes() const { return {}; }
};

// Several backend folders' settings as one: each call goes to every one of them, in order.
class BackendSettingsList final : public BackendSettings {
 public:
  void add(std::unique_ptr<BackendSettings> s) { all_.push_back(std::move(s)); }
  void setCommandLinePython(const std::string& p) override {
    for (auto& s : all_) s->setCommandLinePython(p);
  }
  void setGuiPython(const std::string& p) override {
    for (auto& s : all_) s->setGuiPython(p);
  }
  void setBackgroundChecks(bool on) override {
    for (auto& s : all_) s->setBackgroundChecks(on);
  }
  void setCancel(const std::atomic<bool>* c) override {
    for (auto& s : all_) s->setCancel(c);
  }
  void setAvailabilityListener(std::function<void()> l) override {
    for (auto& s : all_) s->setAvailabilityListener(l);
  }
  void recheck() override {
    for (auto& s : all_) s->recheck();
  }
  std::string settingProblem() const override {
    for (const auto& s : all_)
      if (std::string p = s->settingProblem(); !p.empty()) return p;
    return {};
  }
  std::map<std::string, std::string> notes() const override {
    std::map<std::string, std::string> all;
    for (const auto& s : all_) all.merge(s->notes());
    return all;
  }
  std::shared_ptr<void> waitForChecksOnThisThread() override {
    auto held = std::make_shared<std::vector<std::shared_ptr<void>>>();
    for (auto& s : all_) held->push_back(s->waitForChecksOnThisThread());
    return held;
  }

 private:
  std::vector<std::unique_ptr<BackendSettings>> all_;
};

}  // namespace attnscope
