#include "core/spec/sweep_spec.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/spec/spec_fields.h"
#include "core/base/utf8_text.h"

namespace attnscope {

namespace {

const SweepAxis* axisFor(const SweepSpec& sw, std::string_view name) {
  const SpecField* want = findSpecField(name);
  for (const auto& a : sw.axes)
    if (findSpecField(a.field) == want) return &a;
  return nullptr;
}

// How many values of `axis` (or the base's one value when the field is not swept) satisfy `pred`.
template <typename Parse, typename Pred>
size_t countValues(const SweepAxis* axis, Parse parse, Pred pred, bool baseMatches) {
  if (!axis) return baseMatches ? 1 : 0;
  size_t n = 0;
  for (const auto& v : axis->values)
    if (auto x = parse(v); x && pred(*x)) ++n;
  return n;
}

// A grid that sweeps pass over forward and train may also sweep checkpoint; its forward points
// with a checkpoint other than none mean nothing (a forward saves nothing for a backward), so the
// grid leaves them out rather than refusing the whole sweep: `--pass forward,train --checkpoint
// none,attention` is forward, train, and train with checkpoint, side by side. Where pass is not
// swept over train, such a point stays an error (the user asked for exactly that point).
bool dropsForwardCheckpoints(const SweepSpec& sw) {
  const SweepAxis* pass = axisFor(sw, "pass");
  return pass && countValues(pass, parsePass, [](Pass p) { return p == Pass::train; }, false) > 0;
}

bool meaningless(const WorkloadSpec& s) { return s.pass != Pass::train && s.checkpoint != Checkpoint::none; }

// Problems of the grid as written, found before any point exists.
std::vector<SpecError> gridProblems(const SweepSpec& sw) {
  std::vector<SpecError> errs;
  for (const auto& axis : sw.axes) {
    if (axis.values.empty()) errs.push_back({axis.field, "", axis.field + " has no values"});
    for (size_t i = 0; i < axis.values.size(); ++i) {
      const std::string& v = axis.values[i];
      if (v.empty()) errs.push_back({axis.field, v, axis.field + " has an empty value"});
      else if (std::find(axis.values.begin(), axis.values.begin() + static_cast<std::ptrdiff_t>(i), v) !=
               axis.values.begin() + static_cast<std::ptrdiff_t>(i))
        errs.push_back({axis.field, v, axis.field + " value '" + v + "' is given twice"});
    }
  }
  // Counted with at least one backend, so a grid too large is refused before backends are chosen.
  SweepSpec counted = sw;
  if (counted.backends.empty()) counted.backends = {""};
  if (errs.empty() && counted.pointCount() > kMaxSweepPoints) {
    std::string shape;
    for (const auto& a : sw.axes) shape += a.field + " " + std::to_string(a.values.size()) + " x ";
    shape += std::to_string(std::max<size_t>(1, sw.backends.size())) + " backends";
    const size_t n = counted.pointCount();
    errs.push_back({"sweep", std::to_string(n),
                    "the sweep has " + (n == SIZE_MAX ? std::string("more than 2^64") : std::to_string(n)) + " points (" +
                        shape + "); at most " + std::to_string(kMaxSweepPoints) + " points per sweep"});
  }
  return errs;
}

constexpr size_t kMaxReportedBadPoints = 10;

}  // namespace

std::vector<WorkloadSpec> SweepSpec::expand(std::vector<SpecError>* errors) const {
  if (auto problems = gridProblems(*this); !problems.empty()) {
    if (errors) errors->insert(errors->end(), problems.begin(), problems.end());
    return {};
  }
  std::vector<WorkloadSpec> points{base};
  for (const auto& axis : axes) {
    std::vector<WorkloadSpec> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        WorkloadSpec s = p;
        if (auto e = setField(s, axis.field, v)) {
          // A value that does not parse fails the same way at every point: report it once.
          if (errors && std::none_of(errors->begin(), errors->end(), [&](const SpecError& x) {
                return x.field == e->field && x.value == e->value && x.message == e->message;
              }))
            errors->push_back(*e);
          continue;
        }
        next.push_back(s);
      }
    points = std::move(next);
  }
  if (dropsForwardCheckpoints(*this)) std::erase_if(points, meaningless);
  if (errors) {
    size_t bad = 0;
    for (const auto& p : points)
      for (auto& e : validate(p)) {
        if (++bad > kMaxReportedBadPoints) continue;
        e.message += " [point " + summary(p) + "]";
        errors->push_back(std::move(e));
      }
    if (bad > kMaxReportedBadPoints)
      errors->push_back({"sweep", std::to_string(bad), "... and " + std::to_string(bad - kMaxReportedBadPoints) +
                                                           " more problems in other points"});
  }
  return points;
}

size_t SweepSpec::pointCount() const {
  size_t n = backends.size();
  for (const auto& a : axes)
    if (__builtin_mul_overflow(n, a.values.size(), &n)) return SIZE_MAX;
  if (!dropsForwardCheckpoints(*this)) return n;
  // Less the forward points with a checkpoint: (forward values) x (checkpoints other than none)
  // x every other axis x backends.
  const SweepAxis* pass = axisFor(*this, "pass");
  const SweepAxis* checkpoint = axisFor(*this, "checkpoint");
  size_t dropped = backends.size() * countValues(pass, parsePass, [](Pass p) { return p != Pass::train; }, false) *
                   countValues(checkpoint, parseCheckpoint, [](Checkpoint c) { return c != Checkpoint::none; },
                               base.checkpoint != Checkpoint::none);
  for (const auto& a : axes)
    if (&a != pass && &a != checkpoint) dropped *= a.values.size();
  return n - dropped;
}

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<std::string> splitAxisList(std::string_view text, std::string* problem) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (;;) {
    const size_t comma = text.find(',', begin);
    const std::string item(trimmed(text.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin)));
    if (item.empty()) {
      if (problem) *problem = "empty item in '" + std::string(text) + "' (write values separated by commas)";
      return {};
    }
    if (std::find(out.begin(), out.end(), item) != out.end()) {
      if (problem) *problem = "'" + item + "' is given twice in '" + std::string(text) + "'";
      return {};
    }
    out.push_back(item);
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

std::vector<SweepAxis> parseAxisAssignments(std::string_view text, std::vector<SpecError>* errors) {
  std::vector<SweepAxis> axes;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t semi = text.find(';', begin);
    const std::string_view part = trimmed(text.substr(begin, semi == std::string_view::npos ? std::string_view::npos : semi - begin));
    begin = semi == std::string_view::npos ? text.size() + 1 : semi + 1;
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string field(trimmed(part.substr(0, eq)));
    if (eq == std::string_view::npos || field.empty()) {
      if (errors) errors->push_back({field, std::string(part), "write field=v1,v2 (got '" + std::string(part) + "')"});
      continue;
    }
    std::string problem;
    std::vector<std::string> values = splitAxisList(part.substr(eq + 1), &problem);
    if (values.empty()) {
      if (errors) errors->push_back({field, std::string(part), field + ": " + problem});
      continue;
    }
    axes.push_back({field, std::move(values)});
  }
  return axes;
}

std::optional<std::string> sweepNameProblem(std::string_view name) {
  if (name.size() > kMaxSweepNameBytes)
    return "is " + std::to_string(name.size()) + " bytes long (at most " + std::to_string(kMaxSweepNameBytes) + ")";
  if (!isValidUtf8(name)) return "is not valid UTF-8 text";
  return std::nullopt;
}

nlohmann::json toJson(const SweepSpec& s) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : s.axes) axes.push_back({{"field", a.field}, {"values", a.values}});
  return {{"name", s.name},     {"base", toJson(s.base)}, {"axes", axes},
          {"backends", s.backends}, {"warmup", s.warmup}, {"reps", s.reps},
          {"memory_budget", s.memory_budget}, {"check", toString(s.check)}};
}

namespace {

// An integer member of a stored sweep, or fallback where it is absent. A float, a string or a
// number outside T's range is refused with the key's name (a damaged or foreign row), never
// converted: nlohmann's conversion of 1e37 to an integer is undefined behaviour (fuzz_spec).
template <typename T>
T integerMember(const nlohmann::json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  if (it == j.end()) return fallback;
  constexpr auto lo = std::numeric_limits<T>::min();
  constexpr auto hi = std::numeric_limits<T>::max();
  if (it->is_number_unsigned()) {
    if (it->template get<uint64_t>() <= static_cast<uint64_t>(hi)) return static_cast<T>(it->template get<uint64_t>());
  } else if (it->is_number_integer()) {
    const int64_t v = it->template get<int64_t>();
    if (v >= lo && v <= hi) return static_cast<T>(v);
  }
  throw std::invalid_argument(std::string("'") + key + "' must be an integer from " + std::to_string(lo) + " to " +
                              std::to_string(hi) + ", not " + it->dump());
}

}  // namespace

SweepSpec sweepSpecFromJson(const nlohmann::json& j) {
  SweepSpec s;
  s.name = j.value("name", "");
  s.base = workloadSpecFromJson(j.at("base"));
  for (const auto& a : j.value("axes", nlohmann::json::array()))
    s.axes.push_back({a.at("field").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
  s.backends = j.value("backends", std::vector<std::string>{});
  s.warmup = integerMember(j, "warmup", 1);
  s.reps = integerMember(j, "reps", 3);
  s.memory_budget = integerMember(j, "memory_budget", int64_t{-1});
  // A sweep saved before the check had modes reads as auto.
  if (const auto it = j.find("check"); it != j.end()) {
    const auto mode = it->is_string() ? parseCheckMode(it->get<std::string>()) : std::nullopt;
    if (!mode)
      throw std::invalid_argument("'check' must be one of " + std::string(kCheckModeChoices) + ", not " + it->dump());
    s.check = *mode;
  }
  return s;
}

}  // namespace attnscope
