#include "core/export/sweep_compare.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/spec/workload_spec.h"

namespace attnscope {

namespace {

std::string valueText(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

bool keyLess(const std::vector<PointKeyValue>& a, const std::vector<PointKeyValue>& b) {
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i].numeric && b[i].numeric) {
      if (a[i].number != b[i].number) return a[i].number < b[i].number;
    } else if (a[i].text != b[i].text) {
      return a[i].text < b[i].text;
    }
  }
  return a.size() < b.size();
}

}  // namespace

SweepComparison compareSweeps(const std::vector<const std::vector<RunResult>*>& sweeps) {
  SweepComparison out;
  // Canonical JSON of every run, once.
  std::vector<std::vector<nlohmann::json>> specs(sweeps.size());
  for (size_t s = 0; s < sweeps.size(); ++s)
    for (const RunResult& r : *sweeps[s]) specs[s].push_back(toJson(r.spec));

  // Swept: varies inside one sweep. Differing: constant inside each sweep, not across them.
  std::set<std::string> swept;
  std::map<std::string, std::set<std::string>> across;
  for (size_t s = 0; s < sweeps.size(); ++s) {
    std::map<std::string, std::set<std::string>> within;
    for (const auto& j : specs[s])
      for (const auto& [k, v] : j.items()) within[k].insert(v.dump());
    for (const auto& [k, values] : within) {
      if (values.size() > 1) swept.insert(k);
      across[k].insert(values.begin(), values.end());
    }
  }
  swept.erase("seed");  // inputs differ, the point is the same
  for (const std::string& f : specFieldNames()) {
    if (swept.count(f)) {
      out.key_fields.push_back(f);
    } else if (f != "seed" && across.count(f) && across[f].size() > 1) {
      out.differing_fields.push_back(f);
      std::vector<std::string> values;
      for (size_t s = 0; s < sweeps.size(); ++s)
        values.push_back(specs[s].empty() || !specs[s][0].contains(f) ? std::string() : valueText(specs[s][0][f]));
      out.differing_values.push_back(std::move(values));
    }
  }

  std::map<std::string, size_t> index;  // backend + key text -> point
  std::vector<std::string> backend_order;
  for (size_t s = 0; s < sweeps.size(); ++s) {
    for (size_t i = 0; i < sweeps[s]->size(); ++i) {
      const RunResult& r = (*sweeps[s])[i];
      const nlohmann::json& j = specs[s][i];
      ComparedPoint p;
      p.backend = r.backend;
      p.label = r.backend;
      std::string id = r.backend;
      for (const std::string& f : out.key_fields) {
        PointKeyValue kv;
        kv.field = f;
        if (j.contains(f)) {
          kv.text = valueText(j[f]);
          kv.numeric = j[f].is_number();
          kv.number = kv.numeric ? j[f].get<double>() : 0;
        }
        p.label += " " + f + "=" + kv.text;
        id += "\n" + f + "=" + kv.text;
        p.key.push_back(std::move(kv));
      }
      auto [it, fresh] = index.try_emplace(id, out.points.size());
      if (fresh) {
        p.runs.assign(sweeps.size(), nullptr);
        out.points.push_back(std::move(p));
        if (std::find(backend_order.begin(), backend_order.end(), r.backend) == backend_order.end())
          backend_order.push_back(r.backend);
      }
      const RunResult*& slot = out.points[it->second].runs[s];
      if (!slot) slot = &r;
    }
  }
  auto rank = [&](const std::string& b) { return std::find(backend_order.begin(), backend_order.end(), b) - backend_order.begin(); };
  std::stable_sort(out.points.begin(), out.points.end(), [&](const ComparedPoint& a, const ComparedPoint& b) {
    if (a.backend != b.backend) return rank(a.backend) < rank(b.backend);
    return keyLess(a.key, b.key);
  });
  return out;
}

namespace {

template <typename F>
std::optional<double> ratio(const ComparedPoint& p, size_t a, size_t b, F value) {
  if (a >= p.runs.size() || b >= p.runs.size()) return std::nullopt;
  const RunResult* ra = p.runs[a];
  const RunResult* rb = p.runs[b];
  if (!ra || !rb || ra->status != RunStatus::ok || rb->status != RunStatus::ok) return std::nullopt;
  if (notComparable(ra->spec, rb->spec)) return std::nullopt;
  const double va = value(*ra), vb = value(*rb);
  if (!(va > 0) || vb < 0) return std::nullopt;
  return vb / va;
}

}  // namespace

std::vector<std::string> differingFields(const WorkloadSpec& a, const WorkloadSpec& b) {
  const nlohmann::json ja = toJson(a), jb = toJson(b);
  std::vector<std::string> out;
  for (const std::string& f : specFieldNames())
    if (f != "seed" && ja.value(f, nlohmann::json()) != jb.value(f, nlohmann::json())) out.push_back(f);
  return out;
}

std::optional<std::string> notComparable(const WorkloadSpec& a, const WorkloadSpec& b) {
  if (a.kind != b.kind)
    return "kind differs (" + std::string(toString(a.kind)) + " vs " + std::string(toString(b.kind)) +
           "): an attention call and a whole layer are different work, so their ratios mean nothing";
  return std::nullopt;
}

std::optional<double> peakRatio(const ComparedPoint& p, size_t a, size_t b) {
  return ratio(p, a, b, [](const RunResult& r) { return static_cast<double>(r.memory.measured_peak); });
}

std::optional<double> timeRatio(const ComparedPoint& p, size_t a, size_t b) {
  return ratio(p, a, b, [](const RunResult& r) { return r.timing.median_s; });
}

std::map<std::string, std::string> torchEnvironment(const std::vector<RunResult>& runs) {
  std::map<std::string, std::string> out;
  for (const auto& r : runs) {
    if (!r.facts.count("torch")) continue;
    for (const char* k : {"python", "torch", "torch.cuda", "torch.cudnn", "torch.device", "torch.capability"})
      if (auto it = r.facts.find(k); it != r.facts.end()) out[k] = it->second;
    break;
  }
  return out;
}

std::string torchRan(const RunResult& run) {
  const auto it = run.facts.find("torch.ran");
  return it == run.facts.end() ? std::string() : it->second;
}

}  // namespace attnscope
