#pragma once
// Runs a SweepSpec point by point; isolates failures, reports progress, honours cancellation.

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/backend/backend_registry.h"
#include "core/engine/run_engine.h"
#include "core/spec/sweep_spec.h"

namespace attnscope {

struct SweepProgress {
  size_t done = 0;   // points finished
  size_t total = 0;  // points in the sweep
  std::string current;  // "cpu.flash B1 H8/8 L1024x1024 D64 fp32 none"
  double elapsed_s = 0;
  double eta_s = -1;  // -1 until it can be estimated
};

struct SweepCallbacks {
  std::function<void(const SweepProgress&)> progress;  // before each point and at the end
  std::function<void(RunResult&)> result;         // after each finished point (store it here)
};

class SweepRunner {
 public:
  explicit SweepRunner(const BackendRegistry& registry) : registry_(registry) {}
  void setCapture(TraceCapture* capture) { capture_ = capture; }
  // Runs only these global point indexes (grid index x backends + backend index, ascending; a
  // shard's share, core/engine/shard.h); nullopt: every point. Indexes past the grid are refused
  // by run() with std::invalid_argument.
  void selectPoints(std::optional<std::vector<size_t>> points) { selected_ = std::move(points); }

  // Each result carries its global point index (RunResult::point_index).
  // Returns every finished point, without its trace events (the result callback gets them). A cancel stops within a point (CPU backends check often) and
  // the point in flight is returned with status cancelled. Throws std::invalid_argument when the
  // spec has invalid points or names an unknown backend (nothing runs then).
  std::vector<RunResult> run(const SweepSpec& spec, const SweepCallbacks& callbacks,
                             const std::atomic<bool>* cancel = nullptr);

 private:
  const BackendRegistry& registry_;
  TraceCapture* capture_ = nullptr;
  std::optional<std::vector<size_t>> selected_;
};

}  // namespace attnscope
