#pragma once
// What every front end needs before it can run anything: the backends of this build and the
// device-side trace capture, set up in the one order that works. The CLI and the GUI both take
// theirs from here, so a GUI sweep on a GPU records kernels and the CUPTI peak as the CLI does.
//
// Order: the capture starts first. CUPTI must subscribe before the first CUDA call of the
// process, and registering the CUDA backends makes one (they probe the device).

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend_registry.h"
#include "core/trace/trace_capture.h"

namespace attnscope {

class SweepRunner;

class Session {
 public:
  using StartCapture = std::function<TraceCapture*()>;            // null result: no capture
  using RegisterBackends = std::function<void(BackendRegistry&)>;

  Session(StartCapture start_capture, RegisterBackends register_backends);

  // The backends, for the thread that made the session (the CLI, the GUI thread).
  BackendRegistry& registry() { return *registry_; }
  // A second set of the same backends for a worker thread, so no Backend object is used from
  // two threads at once (the GUI asks support() and plan() while its worker runs points).
  std::unique_ptr<BackendRegistry> newRegistry() const;
  // Process-wide, never destroyed; null when this build has none.
  TraceCapture* capture() const { return capture_; }
  // "GPU backends unavailable: ...", "CUPTI unavailable: ...": for the user, once.
  const std::vector<std::string>& notes() const { return notes_; }
  // Hands the capture to a runner: every run is bracketed by it.
  void prepare(SweepRunner& runner) const;

 private:
  RegisterBackends register_;
  TraceCapture* capture_ = nullptr;
  std::unique_ptr<BackendRegistry> registry_;
  std::vector<std::string> notes_;
};

}  // namespace attnscope
