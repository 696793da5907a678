#include "ui/series_builder.h"

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/spec/spec_fields.h"

namespace attnscope::ui {

const char* xFieldName(XField x) {
  switch (x) {
    case XField::heads: return "heads";
    case XField::seq: return "seq";
    case XField::layers: return "layers";
    case XField::tp: return "tp";
  }
  return "heads";
}

double xValue(const WorkloadSpec& spec, XField x) {
  switch (x) {
    case XField::heads: return static_cast<double>(spec.heads);
    case XField::seq: return static_cast<double>(spec.seq_q);
    case XField::layers: return static_cast<double>(spec.layers);
    case XField::tp: return static_cast<double>(spec.tp);
  }
  return 0;
}

int64_t shownPeak(const RunResult& r) {
  return r.status == RunStatus::ok && r.memory.measured_peak >= 0 ? r.memory.measured_peak
                                                                   : r.memory.predicted_peak;
}

namespace {

// The spec of a run without the x field (and what x drags along with it), as JSON.
nlohmann::json groupKey(const WorkloadSpec& spec, XField x) {
  nlohmann::json j = toJson(spec);
  j.erase("seed");
  switch (x) {
    case XField::heads:
      j.erase("heads");
      if (spec.kv_heads == 0) j.erase("kv_heads");
      if (spec.width > 0) j.erase("head_dim");  // head_dim = width / heads follows heads
      break;
    case XField::seq:
      j.erase("seq");
      if (spec.seq_kv == 0) j.erase("seq_kv");
      break;
    case XField::layers: j.erase("layers"); break;
    case XField::tp: j.erase("tp"); break;
  }
  return j;
}

std::string valueText(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::vector<PlotSeries> buildSeries(const SweepSnapshots& sweeps, XField x) {
  struct Group {
    size_t sweep;
    std::string backend;
    nlohmann::json key;
    std::vector<const RunResult*> runs;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> index;
  for (size_t s = 0; s < sweeps.size(); ++s) {
    if (!sweeps[s]) continue;
    for (const RunResult& r : sweeps[s]->runs) {
      nlohmann::json key = groupKey(r.spec, x);
      const std::string id = std::to_string(s) + "|" + r.backend + "|" + key.dump();
      auto [it, fresh] = index.try_emplace(id, groups.size());
      if (fresh) groups.push_back({s, r.backend, std::move(key), {}});
      groups[it->second].runs.push_back(&r);
    }
  }
  // Fields whose value differs between groups name the series.
  std::set<std::string> varying;
  for (const auto& g : groups)
    for (const auto& [k, v] : g.key.items())
      for (const auto& h : groups)
        if (!h.key.contains(k) || h.key[k] != v) varying.insert(k);

  // In the field table's order, so kind, pass and checkpoint lead ("cpu.flash pass=train
  // checkpoint=attention seq=512"): forward vs train and what checkpointing buys read first.
  std::vector<std::string> ordered;
  for (const SpecField& f : specFields())
    if (varying.erase(std::string(f.name))) ordered.emplace_back(f.name);
  ordered.insert(ordered.end(), varying.begin(), varying.end());

  // Pass is the line pattern and checkpoint the marker when they vary; where they do not, those
  // tell overlaid sweeps apart (as before: fp16 and fp32 sweeps of one backend stay apart even
  // where their shades are close).
  const bool by_pass = std::find(ordered.begin(), ordered.end(), "pass") != ordered.end();
  const bool by_checkpoint = std::find(ordered.begin(), ordered.end(), "checkpoint") != ordered.end();
  auto choiceIndex = [](std::string_view field, const std::string& value) {
    const SpecField* f = findSpecField(field);
    if (f)
      for (size_t i = 0; i < f->choices.size(); ++i)
        if (f->choices[i] == value) return static_cast<int>(i);
    return 0;
  };

  std::vector<PlotSeries> out;

  for (const auto& g : groups) {
    PlotSeries ps;
    ps.backend = g.backend;
    ps.sweep = g.sweep;
    ps.label = g.backend;
    ps.colour_label = g.backend;
    for (const auto& k : ordered) {
      if (!g.key.contains(k)) continue;
      const std::string part = k + "=" + valueText(g.key[k]);
      ps.label += " " + part;
      if (k == "pass" && by_pass) {
        ps.line = choiceIndex(k, valueText(g.key[k]));
        ps.line_key = part;
      } else if (k == "checkpoint" && by_checkpoint) {
        ps.marker = choiceIndex(k, valueText(g.key[k]));
        ps.marker_key = part;
      } else {
        ps.colour_label += " " + part;
      }
    }
    if (!by_pass) ps.line = static_cast<int>(g.sweep);
    if (!by_checkpoint) ps.marker = static_cast<int>(g.sweep);
    for (const RunResult* r : g.runs) {
      SeriesPoint p;
      p.x = xValue(r->spec, x);
      p.predicted = r->memory.predicted_peak;
      p.measured = r->status == RunStatus::ok ? r->memory.measured_peak : -1;
      p.status = r->status;
      p.median_s = r->status == RunStatus::ok ? r->timing.median_s : 0;
      p.flops_per_s = r->status == RunStatus::ok ? r->flopsPerSecond() : 0;
      p.run = r;
      ps.points.push_back(p);
    }
    std::stable_sort(ps.points.begin(), ps.points.end(),
                     [](const SeriesPoint& a, const SeriesPoint& b) { return a.x < b.x; });
    out.push_back(std::move(ps));
  }
  // Overlaid sweeps: the sweep's id leads only where the fields alone would give two series one
  // label (sweeps of the same spec); a train sweep beside a forward one reads "pass=train" vs
  // "pass=forward" and keeps its legend short enough to leave the plot its width.
  std::set<std::string> labels;
  bool clash = false;
  for (const auto& ps : out) clash = clash || !labels.insert(ps.label).second;
  if (clash)
    for (auto& ps : out) {
      // The sweep's id, which the context line spells out with its name ("S1 train vs S3 ...").
      const std::string id = "S" + std::to_string(sweeps[ps.sweep]->info.id) + ": ";
      ps.label = id + ps.label;
      ps.colour_label = id + ps.colour_label;
    }
  // What torch ran, in the legend: "torch.cuda.auto seq=512 [ran flash]" ("[ran efficient, math]"
  // when the points differ), per series and per colour.
  auto ranText = [](const std::set<std::string>& ran) {
    std::string t;
    for (const auto& k : ran) t += (t.empty() ? " [ran " : ", ") + k;
    return t.empty() ? t : t + "]";
  };
  std::map<std::string, std::set<std::string>> ran_per_colour;
  for (auto& ps : out) {
    std::set<std::string> ran;
    for (const SeriesPoint& p : ps.points)
      if (auto it = p.run->facts.find("torch.ran"); it != p.run->facts.end()) ran.insert(it->second);
    ran_per_colour[ps.colour_label].insert(ran.begin(), ran.end());
    ps.label += ranText(ran);
  }
  for (auto& ps : out) ps.colour_label += ranText(ran_per_colour[ps.colour_label]);
  // A shade per colour label of a backend: the series that differ only by pass or checkpoint
  // (pattern, marker) share one.
  std::map<std::string, std::map<std::string, int>> shades;  // backend -> colour label -> shade
  for (auto& ps : out) {
    auto& colours = shades[ps.backend];
    ps.variant = colours.try_emplace(ps.colour_label, static_cast<int>(colours.size())).first->second;
  }
  for (auto& ps : out) ps.variant_count = static_cast<int>(shades[ps.backend].size());
  return out;
}

std::vector<std::string> mapVariants(const SweepSnapshot& sweep) {
  std::vector<nlohmann::json> keys;
  for (const RunResult& r : sweep.runs) {
    nlohmann::json j = groupKey(r.spec, XField::heads);
    j.erase("seq");
    if (r.spec.seq_kv == 0) j.erase("seq_kv");
    keys.push_back(std::move(j));
  }
  std::set<std::string> varying;
  for (const auto& k : keys)
    for (const auto& [name, v] : k.items())
      if (std::any_of(keys.begin(), keys.end(), [&](const nlohmann::json& o) { return !o.contains(name) || o[name] != v; }))
        varying.insert(name);
  std::vector<std::string> ordered;
  for (const SpecField& f : specFields())
    if (varying.erase(std::string(f.name))) ordered.emplace_back(f.name);
  ordered.insert(ordered.end(), varying.begin(), varying.end());
  std::vector<std::string> out;
  for (const auto& k : keys) {
    std::string label;
    for (const auto& name : ordered)
      if (k.contains(name)) label += (label.empty() ? "" : " ") + name + "=" + valueText(k[name]);
    out.push_back(std::move(label));
  }
  return out;
}

std::vector<int64_t> distinctValues(const SweepSnapshots& sweeps, XField x) {
  std::set<int64_t> v;
  for (const auto& s : sweeps)
    if (s)
      for (const auto& r : s->runs) v.insert(static_cast<int64_t>(xValue(r.spec, x)));
  return {v.begin(), v.end()};
}

}  // namespace attnscope::ui
