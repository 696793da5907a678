#include "core/backend/backend.h"

#include "core/base/clock.h"

namespace attnscope {
namespace {
constexpr size_t kNotRecorded = static_cast<size_t>(-1);
}

void RunContext::beginPhase(std::string_view name) {
  if (!recording_) {
    ++dropped_;
    open_.push_back(kNotRecorded);
    return;
  }
  TraceEvent e;
  e.kind = EventKind::phase;
  e.source = EventSource::host;
  e.memory = alloc_.kind();
  e.name = std::string(name);
  e.start_ns = e.end_ns = nowNs();
  open_.push_back(phases_.size());
  phases_.push_back(std::move(e));
  if (listener_) listener_->phaseBegin(name);
}

void RunContext::endPhase() {
  if (open_.empty()) return;
  const size_t index = open_.back();
  open_.pop_back();
  if (index == kNotRecorded) return;
  TraceEvent& e = phases_[index];
  e.end_ns = nowNs();
  if (listener_) listener_->phaseEnd(e.name);
}

void RunContext::addMeasuredEvents(std::vector<TraceEvent> events) {
  for (auto& e : events) measured_events_.push_back(std::move(e));
}

void RunContext::addWarning(std::string text) {
  for (const auto& w : warnings_)
    if (w == text) return;  // a warning repeated by every repetition is said once
  warnings_.push_back(std::move(text));
}

}  // namespace attnscope
