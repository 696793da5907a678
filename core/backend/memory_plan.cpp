#include "core/backend/memory_plan.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace attnscope {

std::string_view toString(BufferRole r) {
  switch (r) {
    case BufferRole::input: return "input";
    case BufferRole::output: return "output";
    case BufferRole::mask: return "mask";
    case BufferRole::workspace: return "workspace";
    case BufferRole::library: return "library";
  }
  return "?";
}

int64_t MemoryPlan::bytesAt(int step) const {
  int64_t sum = 0;
  for (const auto& b : buffers)
    if (b.first_step <= step && step <= b.last_step) sum += b.bytes;
  return sum;
}

MemoryPlan MemoryPlan::unknown(std::string reason) {
  MemoryPlan p;
  p.known = false;
  p.unknown_reason = std::move(reason);
  return p;
}

int64_t MemoryPlan::peakBytes() const {
  if (!known) return -1;
  int64_t peak = 0;
  for (int s = 0; s < std::max(1, stepCount()); ++s) peak = std::max(peak, bytesAt(s));
  return peak;
}

int MemoryPlan::peakStep() const {
  int best = 0;
  int64_t peak = -1;
  for (int s = 0; s < std::max(1, stepCount()); ++s)
    if (bytesAt(s) > peak) {
      peak = bytesAt(s);
      best = s;
    }
  return best;
}

int64_t MemoryPlan::ioBytes() const {
  int64_t sum = 0;
  for (const auto& b : buffers)
    if (b.role == BufferRole::input || b.role == BufferRole::output || b.role == BufferRole::mask) sum += b.bytes;
  return sum;
}

std::string MemoryPlan::stepName(int s) const {
  return s >= 0 && s < stepCount() ? steps[static_cast<size_t>(s)] : "step " + std::to_string(s);
}

std::string MemoryPlan::lifetime(const PlannedBuffer& b) const {
  return b.first_step == b.last_step ? stepName(b.first_step) : stepName(b.first_step) + ".." + stepName(b.last_step);
}

std::string MemoryPlan::problem() const {
  // Every sum bytesAt and peakBytes form stays below this, so none of them can overflow.
  constexpr int64_t kMaxTotal = int64_t{1} << 62;
  const int last = std::max(1, stepCount()) - 1;
  int64_t total = 0;
  for (const PlannedBuffer& b : buffers) {
    if (b.first_step < 0 || b.first_step > b.last_step || b.last_step > last)
      return "buffer '" + b.name + "' lives in steps " + std::to_string(b.first_step) + ".." +
             std::to_string(b.last_step) + " of " + std::to_string(stepCount());
    if (b.bytes < 0 || b.bytes > kMaxTotal - total)
      return "buffer '" + b.name + "' has " + std::to_string(b.bytes) + " bytes";
    total += b.bytes;
  }
  return {};
}

int MemoryPlan::addStep(std::string name) {
  steps.push_back(std::move(name));
  return stepCount() - 1;
}

void MemoryPlan::add(std::string name, int64_t bytes, int first, int last, BufferRole role) {
  buffers.push_back({std::move(name), bytes, first, last, role});
}

nlohmann::json toJson(const MemoryPlan& plan) {
  nlohmann::json buffers = nlohmann::json::array();
  for (const auto& b : plan.buffers)
    buffers.push_back({{"name", b.name}, {"bytes", b.bytes}, {"first_step", b.first_step},
                       {"last_step", b.last_step}, {"role", toString(b.role)}});
  nlohmann::json j = {{"steps", plan.steps}, {"buffers", buffers}, {"peak_bytes", plan.peakBytes()}};
  if (!plan.known) {
    j["known"] = false;
    j["unknown_reason"] = plan.unknown_reason;
  }
  return j;
}

MemoryPlan memoryPlanFromJson(const nlohmann::json& j) {
  MemoryPlan p;
  p.steps = j.value("steps", std::vector<std::string>{});
  p.known = j.value("known", true);
  p.unknown_reason = j.value("unknown_reason", "");
  for (const auto& b : j.value("buffers", nlohmann::json::array())) {
    PlannedBuffer pb;
    pb.name = b.value("name", "");
    pb.bytes = b.value("bytes", int64_t{0});
    pb.first_step = b.value("first_step", 0);
    pb.last_step = b.value("last_step", 0);
    std::string role = b.value("role", "workspace");
    for (auto r : {BufferRole::input, BufferRole::output, BufferRole::mask, BufferRole::workspace, BufferRole::library})
      if (toString(r) == role) pb.role = r;
    p.buffers.push_back(std::move(pb));
  }
  return p;
}

}  // namespace attnscope
