#pragma once
// Per-kernel aggregation of a run's trace, for `attnscope show ID --kernels` and the GUI.
// Kernels are grouped by name and launch configuration (grid, block, registers, shared memory), so
// one kernel launched with two grids gives two rows. Every kernel event counts, whatever its
// source (CUPTI kernels on the GPU, compute regions of CPU backends).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/trace/trace_event.h"

namespace attnscope {

struct KernelStats {
  std::string name;
  EventSource source = EventSource::cupti;
  KernelInfo config;  // grid, block, registers, static and dynamic shared memory
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  double meanNs() const { return count > 0 ? static_cast<double>(total_ns) / static_cast<double>(count) : 0.0; }
  int64_t sharedMemory() const { return static_cast<int64_t>(config.static_smem) + config.dynamic_smem; }
};

// Sorted by total time, longest first; ties by name.
std::vector<KernelStats> summarizeKernels(const std::vector<TraceEvent>& events);

// [{"name", "source", "count", "total_ns", "mean_ns", "min_ns", "max_ns", "grid": [x,y,z],
//   "block": [x,y,z], "registers", "static_smem", "dynamic_smem"}, ...]
nlohmann::json toJson(const std::vector<KernelStats>& kernels);

}  // namespace attnscope
