#include "core/engine/session.h"

#include "core/engine/sweep_runner.h"

namespace attnscope {

Session::Session(StartCapture start_capture, RegisterBackends register_backends)
    : register_(std::move(register_backends)) {
  if (start_capture) capture_ = start_capture();
  if (capture_ && !capture_->active()) notes_.push_back(capture_->note());
  registry_ = newRegistry();
  for (const auto& n : registry_->notes()) notes_.insert(notes_.begin(), n);
}

std::unique_ptr<BackendRegistry> Session::newRegistry() const {
  auto r = std::make_unique<BackendRegistry>();
  if (register_) register_(*r);
  return r;
}

void Session::prepare(SweepRunner& runner) const { runner.setCapture(capture_); }

}  // namespace attnscope
