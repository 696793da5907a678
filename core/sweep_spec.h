#pragma once
// A sweep: a grid over spec fields times a list of backends.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/workload_spec.h"

namespace attnscope {

// The most points (grid points x backends) one sweep may have; checked before the grid is expanded.
inline constexpr size_t kMaxSweepPoints = 100000;

struct SweepAxis {
  std::string field;                // a field name of the table (core/spec_fields.h)
  std::vector<std::string> values;  // as written on the command line
};

struct SweepSpec {
  std::string name;
  WorkloadSpec base;
  std::vector<SweepAxis> axes;  // outermost first
  std::vector<std::string> backends;
  int warmup = 1;
  int reps = 3;
  int64_t memory_budget = -1;  // bytes; points predicted above it are skipped. -1: none

  // Every grid point in order (backends not included). Errors name the field and value; a point
  // whose combination is invalid (e.g. width not divisible by heads) is reported, not dropped.
  // One exception: a grid that sweeps pass over train leaves out its forward points with a
  // checkpoint other than none (meaningless), so forward vs train vs checkpoint is one sweep.
  // An axis with no value, an empty value or a value given twice, and a grid of more than
  // kMaxSweepPoints points, are errors found before anything is expanded (nothing is returned).
  std::vector<WorkloadSpec> expand(std::vector<SpecError>* errors = nullptr) const;
  size_t pointCount() const;  // grid points (as expand() gives them) x backends, saturating at SIZE_MAX
};

nlohmann::json toJson(const SweepSpec& s);
SweepSpec sweepSpecFromJson(const nlohmann::json& j);

}  // namespace attnscope
