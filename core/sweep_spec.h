#pragma once
// A sweep: a grid over spec fields times a list of backends.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/workload_spec.h"

namespace attnscope {

struct SweepAxis {
  std::string field;                // a name from specFieldNames()
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
  std::vector<WorkloadSpec> expand(std::vector<SpecError>* errors = nullptr) const;
  size_t pointCount() const;  // grid points x backends
};

nlohmann::json toJson(const SweepSpec& s);
SweepSpec sweepSpecFromJson(const nlohmann::json& j);

}  // namespace attnscope
