#pragma once
// A sweep: a grid over spec fields times a list of backends.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spec/check_mode.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// The most points (grid points x backends) one sweep may have; checked before the grid is expanded.
inline constexpr size_t kMaxSweepPoints = 100000;

// The longest sweep name, in bytes (a name is shown in tables, charts and window titles).
inline constexpr size_t kMaxSweepNameBytes = 200;

// Why `name` cannot name a sweep (not UTF-8, longer than kMaxSweepNameBytes), or nothing. An
// empty name is valid: it means "the default name". Control characters are allowed and escaped
// wherever a name is printed (a name may also come from someone else's database).
std::optional<std::string> sweepNameProblem(std::string_view name);

struct SweepAxis {
  std::string field;                // a field name of the table (core/spec/spec_fields.h)
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
  CheckMode check = CheckMode::automatic;  // the accuracy check of every point (core/spec/check_mode.h)

  // Every grid point in order (backends not included). Errors name the field and value; a point
  // whose combination is invalid (e.g. width not divisible by heads) is reported, not dropped.
  // One exception: a grid that sweeps pass over train leaves out its forward points with a
  // checkpoint other than none (meaningless), so forward vs train vs checkpoint is one sweep.
  // An axis with no value, an empty value or a value given twice, and a grid of more than
  // kMaxSweepPoints points, are errors found before anything is expanded (nothing is returned).
  std::vector<WorkloadSpec> expand(std::vector<SpecError>* errors = nullptr) const;
  size_t pointCount() const;  // grid points (as expand() gives them) x backends, saturating at SIZE_MAX
};

// The one grammar of an axis's values, for every front end: values separated by commas, spaces
// around each ignored ("1, 2, 4"). An empty value or one given twice is refused: the values come
// back empty and *problem says why (without the field's name, which the caller adds as it names
// the field: "--heads: ..." on the command line, "heads: ..." in the window).
std::vector<std::string> splitAxisList(std::string_view text, std::string* problem);

// More axes as one line, "dtype=fp32,fp16; mask=none,causal": field=values parts separated by
// ';' (empty parts ignored). Problems (a part without '=', a field without values, a bad list)
// are appended to *errors, naming the field where there is one.
std::vector<SweepAxis> parseAxisAssignments(std::string_view text, std::vector<SpecError>* errors);

nlohmann::json toJson(const SweepSpec& s);
SweepSpec sweepSpecFromJson(const nlohmann::json& j);

}  // namespace attnscope
