#include "ui/chart_context.h"

#include <algorithm>
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

}  // namespace attnscope::ui
