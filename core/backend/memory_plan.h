#pragma once
// A backend's prediction of its memory: named buffers with sizes and lifetimes over the steps
// of one run. The predicted peak is the largest sum of buffers live at one step.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace attnscope {

enum class BufferRole : uint8_t { input, output, mask, workspace, library };
std::string_view toString(BufferRole r);

struct PlannedBuffer {
  std::string name;
  int64_t bytes = 0;
  int first_step = 0;  // live from the start of first_step...
  int last_step = 0;   // ...to the end of last_step (inclusive)
  BufferRole role = BufferRole::workspace;
};

struct MemoryPlan {
  std::vector<std::string> steps;  // e.g. {"inputs", "scores", "softmax", "pv"}
  std::vector<PlannedBuffer> buffers;
  // False when the backend cannot predict its memory (e.g. PyTorch without a dispatch model for
  // the installed version); then peakBytes() is -1 and unknown_reason says why.
  bool known = true;
  std::string unknown_reason;
  static MemoryPlan unknown(std::string reason);

  int stepCount() const { return static_cast<int>(steps.size()); }
  int64_t bytesAt(int step) const;
  int64_t peakBytes() const;  // -1 when unknown
  int peakStep() const;  // first step where the peak is reached
  // Bytes of inputs, outputs and masks (what overhead is measured against).
  int64_t ioBytes() const;
  // The name of step s; "step s" where s is not one of the plan's steps.
  std::string stepName(int s) const;
  // Where b is live: "scores..softmax", or one step's name when it lives in one.
  std::string lifetime(const PlannedBuffer& b) const;
  // Empty for a sound plan; else what is wrong (a buffer's steps outside the plan's or reversed,
  // a negative size, sizes whose sum overflows): a plan read from a damaged file.
  std::string problem() const;

  // Adds a step and returns its index.
  int addStep(std::string name);
  void add(std::string name, int64_t bytes, int first, int last, BufferRole role);
};

nlohmann::json toJson(const MemoryPlan& plan);
MemoryPlan memoryPlanFromJson(const nlohmann::json& j);

}  // namespace attnscope
