#include "core/torch_dispatch/dispatch_grid.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace attnscope::torch_dispatch {

namespace {
std::vector<std::string> valuesOf(const SweepSpec& sweep, const std::string& field) {
  if (field == kTorchAxis) {
    std::vector<std::string> out;
    for (const auto& v : coveredTorchVersions()) out.push_back(v.text());
    return out;
  }
  for (const auto& a : sweep.axes)
    if (a.field == field && !a.values.empty()) return a.values;
  return {fieldText(sweep.base, field)};
}
}  // namespace

std::string fieldText(const WorkloadSpec& spec, const std::string& field) {
  const nlohmann::json j = toJson(spec);
  if (!j.contains(field) || j[field].is_null()) return "";
  if (j[field].is_string()) return j[field].get<std::string>();
  return j[field].dump();
}

std::vector<std::string> gridFields(const SweepSpec& sweep) {
  std::vector<std::string> out;
  for (const auto& a : sweep.axes)
    if (std::find(out.begin(), out.end(), a.field) == out.end()) out.push_back(a.field);
  for (const char* f : {"heads", "seq"})
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  out.push_back(kTorchAxis);
  return out;
}

DispatchGrid dispatchGrid(const SweepSpec& sweep, const std::string& x_field, const std::string& y_field,
                          const TorchTarget& target, size_t max_cells) {
  DispatchGrid g;
  g.x_field = x_field;
  g.y_field = y_field;
  g.xs = valuesOf(sweep, x_field);
  g.ys = x_field == y_field ? std::vector<std::string>{""} : valuesOf(sweep, y_field);
  while (g.xs.size() * g.ys.size() > max_cells && (g.xs.size() > 1 || g.ys.size() > 1)) {
    g.truncated = true;
    if (g.xs.size() >= g.ys.size()) g.xs.pop_back();
    else g.ys.pop_back();
  }
  WorkloadSpec base = sweep.base;
  for (const auto& a : sweep.axes)
    if (a.field != x_field && a.field != y_field && !a.values.empty()) setField(base, a.field, a.values.front());
  for (const auto& xv : g.xs)
    for (const auto& yv : g.ys) {
      DispatchCell c;
      c.x_value = xv;
      c.y_value = yv;
      WorkloadSpec s = base;
      TorchTarget t = target;
      std::vector<SpecError> errors;
      for (const auto& [field, value] : {std::pair{x_field, xv}, std::pair{y_field, yv}}) {
        if (value.empty()) continue;
        if (field == kTorchAxis) {
          // The release's own wheel (CUDA, cuDNN) on the target's device; the machine facts kept.
          TorchTarget r = defaultTorchTarget(*parseTorchVersion(value), target.device, target.capability);
          r.gpu_name = target.gpu_name;
          r.cpu_threads = target.cpu_threads;
          r.cpu_amx_bf16 = target.cpu_amx_bf16;
          r.cpu_amx_fp16 = target.cpu_amx_fp16;
          t = r;
        } else if (auto e = setField(s, field, value)) {
          errors.push_back(*e);
        }
      }
      if (errors.empty()) errors = validate(s);
      if (!errors.empty()) {
        c.invalid = describe(errors);
        g.cells.push_back(std::move(c));
        continue;
      }
      const SdpaExplanation x = explainSdpa(s, t, ExplainOptions{false});
      c.kernel = x.chosen;
      c.peak_bytes = x.chosen ? x.peakBytes() : 0;
      c.extra_bytes = x.chosen ? x.extraBytes() : 0;
      c.summary = summary(s) + (x_field == kTorchAxis || y_field == kTorchAxis ? ", " + t.describe() : "");
      c.headline = x.headline();
      for (const auto& v : x.verdicts) {
        if (v.chosen) break;
        if (!v.usable) c.rejections.push_back(std::string(toString(v.kernel)) + ": " + v.rule + " — \"" + v.torch_message + "\"");
      }
      g.cells.push_back(std::move(c));
    }
  return g;
}

}  // namespace attnscope::torch_dispatch
