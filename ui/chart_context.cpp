#include "ui/chart_context.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "core/base/format.h"
#include "core/spec/spec_fields.h"

namespace attnscope::ui {

namespace {


std::string num(int64_t v) { return std::to_string(v); }

// The one value a property has over every run, or "" when it varies.
template <typename F>
std::string common(const SweepSnapshots& sweeps, F text) {
  std::set<std::string> seen;
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs) seen.insert(text(r.spec));
  return seen.size() == 1 ? *seen.begin() : std::string();
}

// The fields' words joined by ", ", those named in `skip` left out.
std::string specInWords(const WorkloadSpec& s, const std::vector<std::string>& skip) {
  std::string out;
  for (const SpecField& f : specFields()) {
    if (std::find(skip.begin(), skip.end(), f.name) != skip.end()) continue;
    if (const std::string w = f.wordsText(s); !w.empty()) out += concat(out.empty() ? "" : ", ", w);
  }
  return out;
}

}  // namespace

std::string workloadInWords(const WorkloadSpec& s, const std::vector<std::string>& axes) {
  std::vector<std::string> skip;
  for (const auto& a : axes)
    if (const SpecField* f = findSpecField(a)) skip.emplace_back(f->name);
  return specInWords(s, skip);
}

std::string runInWords(const RunResult& r) { return concat("R", num(r.id), " ", r.backend, ": ", specInWords(r.spec, {})); }

const RunResult* findRun(const SweepSnapshots& sweeps, int64_t run_id) {
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs)
        if (r.id == run_id) return &r;
  return nullptr;
}

std::string chartContext(const SweepSnapshots& sweeps) {
  std::vector<std::string> parts;
  std::string names;
  bool any_run = false;
  for (const auto& s : sweeps) {
    if (!s) continue;
    if (!names.empty()) names += " vs ";
    names += concat("S", num(s->info.id), " ", s->info.name);
    any_run = any_run || !s->runs.empty();
  }
  if (names.empty()) return "no sweep yet: press Run (Ctrl+R), or pick a sweep in the Runs dock";
  parts.push_back(names);
  if (!any_run) return concat(names, " \u00b7 no finished point yet");
  for (const SpecField& f : specFields()) {
    const std::string v = common(sweeps, [&](const WorkloadSpec& spec) { return f.wordsText(spec); });
    if (!v.empty()) parts.push_back(v);
  }
  std::vector<std::string> backends;
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs)
        if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
  std::string b;
  for (const auto& id : backends) b += concat(b.empty() ? "" : ", ", id);
  parts.push_back(b);
  std::string out;
  for (const auto& p : parts) out += concat(out.empty() ? "" : " \u00b7 ", p);
  return out;
}

std::vector<std::string> sweepFindings(const SweepSnapshots& sweeps) {
  std::vector<std::string> out;
  std::vector<const RunResult*> runs;
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs) runs.push_back(&r);
  if (runs.empty()) return {"no finished point yet"};
  auto peakOf = [](const RunResult& r) {
    return r.status == RunStatus::ok && r.memory.measured_peak >= 0 ? r.memory.measured_peak : r.memory.predicted_peak;
  };
  const RunResult* largest = nullptr;
  for (const RunResult* r : runs)
    if (r->status == RunStatus::ok && (!largest || r->memory.measured_peak > largest->memory.measured_peak)) largest = r;
  if (largest)
    out.push_back(concat("largest peak: ", formatBytes(largest->memory.measured_peak), " measured, R",
                         std::to_string(largest->id), " ", largest->backend, " at ", summary(largest->spec)));
  // The largest point: the most work (batch x heads x seq_q x seq_kv) of any run, every backend's
  // run of that same spec beside each other.
  auto work = [](const WorkloadSpec& w) {
    return double(w.batch) * double(w.heads) * double(w.seq_q) * double(w.seq_kv > 0 ? w.seq_kv : w.seq_q);
  };
  const RunResult* biggest = runs.front();
  for (const RunResult* r : runs)
    if (work(r->spec) > work(biggest->spec)) biggest = r;
  const std::string point = summary(biggest->spec);
  std::vector<const RunResult*> at;
  for (const RunResult* r : runs)
    if (summary(r->spec) == point && peakOf(*r) > 0) at.push_back(r);
  std::sort(at.begin(), at.end(), [&](const RunResult* a, const RunResult* b) { return peakOf(*a) > peakOf(*b); });
  if (at.size() >= 2) {
    std::string line = "at the largest point (" + point + "): ";
    for (size_t i = 0; i < at.size(); ++i)
      line += concat(i ? ", " : "", at[i]->backend, " ", formatBytes(peakOf(*at[i])),
                     at[i]->status == RunStatus::ok ? "" : " (" + std::string(toString(at[i]->status)) + ", predicted)");
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.1fx", double(peakOf(*at.front())) / double(peakOf(*at.back())));
    line += concat("; ", at.front()->backend, " needs ", ratio, " what ", at.back()->backend, " does");
    out.push_back(line);
  }
  std::map<std::string, int> failed;
  int n_failed = 0;
  for (const RunResult* r : runs)
    if (r->status != RunStatus::ok) {
      ++failed[std::string(toString(r->status))];
      ++n_failed;
    }
  if (n_failed == 0) {
    out.push_back(concat("every point ran ok (", std::to_string(runs.size()), " runs)"));
  } else {
    std::string line = concat(std::to_string(n_failed), " of ", std::to_string(runs.size()), " points did not run ok: ");
    bool first = true;
    for (const auto& [status, count] : failed) {
      line += concat(first ? "" : ", ", std::to_string(count), " ", status);
      first = false;
    }
    out.push_back(line + " (their charts show them at their prediction)");
  }
  return out;
}

}  // namespace attnscope::ui
