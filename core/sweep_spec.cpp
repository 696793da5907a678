#include "core/sweep_spec.h"

#include <nlohmann/json.hpp>

namespace attnscope {

std::vector<WorkloadSpec> SweepSpec::expand(std::vector<SpecError>* errors) const {
  std::vector<WorkloadSpec> points{base};
  for (const auto& axis : axes) {
    std::vector<WorkloadSpec> next;
    for (const auto& p : points)
      for (const auto& v : axis.values) {
        WorkloadSpec s = p;
        if (auto e = setField(s, axis.field, v)) {
          if (errors) errors->push_back(*e);
          continue;
        }
        next.push_back(s);
      }
    points = std::move(next);
  }
  if (errors)
    for (const auto& p : points)
      for (auto& e : validate(p)) {
        e.message += " [point " + summary(p) + "]";
        errors->push_back(std::move(e));
      }
  return points;
}

size_t SweepSpec::pointCount() const {
  size_t n = 1;
  for (const auto& a : axes) n *= a.values.size();
  return n * backends.size();
}

nlohmann::json toJson(const SweepSpec& s) {
  nlohmann::json axes = nlohmann::json::array();
  for (const auto& a : s.axes) axes.push_back({{"field", a.field}, {"values", a.values}});
  return {{"name", s.name},     {"base", toJson(s.base)}, {"axes", axes},
          {"backends", s.backends}, {"warmup", s.warmup}, {"reps", s.reps},
          {"memory_budget", s.memory_budget}};
}

SweepSpec sweepSpecFromJson(const nlohmann::json& j) {
  SweepSpec s;
  s.name = j.value("name", "");
  s.base = workloadSpecFromJson(j.at("base"));
  for (const auto& a : j.value("axes", nlohmann::json::array()))
    s.axes.push_back({a.at("field").get<std::string>(), a.at("values").get<std::vector<std::string>>()});
  s.backends = j.value("backends", std::vector<std::string>{});
  s.warmup = j.value("warmup", 1);
  s.reps = j.value("reps", 3);
  s.memory_budget = j.value("memory_budget", int64_t{-1});
  return s;
}

}  // namespace attnscope
