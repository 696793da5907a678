#pragma once
// What the chosen Python's torch can do, found out once per Python and cached, so that
// availability(), support() and plan() stay cheap: the GUI calls them on every edit of the spec,
// and importing torch costs seconds.
//
// Blocking mode (the CLI, the tests): the first question starts the worker and waits for its
// hello; the worker is kept as a spare that the first run adopts, so a sweep imports torch once.
// Background mode (the GUI): questions never wait; while the probe runs the torch backends say
// "checking ...", and a listener is told when the answer arrives (or when the Python changes).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "kernels/torch/torch_worker.h"

namespace attnscope::torch {

struct ProbeResult {
  PythonChoice python;
  std::string script;
  TorchHello hello;
  std::string problem;  // empty when torch is usable; else the reason every torch backend gives
  bool cancelled = false;  // the probe was cancelled: nothing is known
};

class TorchProbe {
 public:
  static TorchProbe& instance();

  // The result for the Python chosen now. Blocking mode: probes now if needed. Background mode:
  // nullptr while a probe runs (one is started if needed).
  std::shared_ptr<const ProbeResult> result();
  void setBackground(bool background);
  // Called (from the probe's thread) whenever a background probe finishes.
  void setListener(std::function<void()> listener);
  // A blocking probe gives up when this flag is set (the CLI's Ctrl-C): importing torch takes
  // seconds. A cancelled probe is not cached; its result says `cancelled`.
  void setCancel(const std::atomic<bool>* cancel);
  // Forget the cached answer (e.g. the GUI's Python setting changed).
  void invalidate();
  // While one lives, result() waits on this thread even in background mode: for a sweep's
  // worker thread in the GUI, which must know before it runs a point.
  class BlockingScope {
   public:
    BlockingScope();
    ~BlockingScope();
    BlockingScope(const BlockingScope&) = delete;
    BlockingScope& operator=(const BlockingScope&) = delete;
  };
  // The worker the probe started, if it is still alive and belongs to this Python.
  std::unique_ptr<TorchWorker> takeSpare(const std::string& python_path);

 private:
  TorchProbe() = default;
  static std::string keyOf(const PythonChoice& p, const std::string& script);
  // Runs the probe for `python`; returns the result and possibly a live worker.
  static std::shared_ptr<const ProbeResult> probe(const PythonChoice& python, const std::string& script,
                                                  std::unique_ptr<TorchWorker>* spare,
                                                  const std::atomic<bool>* cancel);

  std::mutex mu_;
  std::condition_variable done_;
  bool background_ = false;
  std::string key_;  // the Python and script the cached result belongs to
  std::shared_ptr<const ProbeResult> cached_;
  bool running_ = false;
  uint64_t generation_ = 0;
  std::unique_ptr<TorchWorker> spare_;
  std::function<void()> listener_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::shared_ptr<const ProbeResult> last_cancelled_;
};

}  // namespace attnscope::torch
