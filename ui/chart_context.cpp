#include "ui/chart_context.h"

#include <algorithm>
#include <set>
#include <vector>

namespace attnscope::ui {

namespace {

// Appends the pieces: GCC 12 warns falsely on `"literal" + std::string` chains (-Warray-bounds).
template <typename... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

std::string num(int64_t v) { return std::to_string(v); }

std::string maskText(const WorkloadSpec& s) {
  std::string m = cat("mask ", toString(s.mask));
  if (s.mask.kind == MaskKind::dense) m += cat(" (", toString(s.mask_layout), ")");
  return m;
}

// What is computed, when it is not the default SDPA forward: "layer, train, checkpoint attention".
std::string workText(const WorkloadSpec& s) {
  std::string out;
  auto add = [&](std::string_view part) { out += cat(out.empty() ? "" : ", ", part); };
  if (s.kind != WorkloadKind::attention) add(toString(s.kind));
  if (s.pass != Pass::forward) add(toString(s.pass));
  if (s.checkpoint != Checkpoint::none) add(cat("checkpoint ", toString(s.checkpoint)));
  return out;
}

std::string widthText(const WorkloadSpec& s) {
  if (s.width > 0) return cat("width ", num(s.width), " (head_dim = ", num(s.width), " / heads)");
  return cat("head_dim ", num(s.head_dim));
}

// The one value a property has over every run, or "" when it varies.
template <typename F>
std::string common(const SweepSnapshots& sweeps, F text) {
  std::set<std::string> seen;
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs) seen.insert(text(r.spec));
  return seen.size() == 1 ? *seen.begin() : std::string();
}

}  // namespace

std::string workloadInWords(const WorkloadSpec& s) {
  std::string out = workText(s);
  out += cat(out.empty() ? "" : ", ", "batch ", num(s.batch), ", ", widthText(s), ", ", toString(s.dtype), ", ", maskText(s));
  if (s.kv_heads > 0) out += cat(", kv_heads ", num(s.kv_heads));
  if (s.seq_kv > 0) out += cat(", seq_kv ", num(s.seq_kv));
  return out;
}

std::string runInWords(const RunResult& r) {
  const WorkloadSpec& s = r.spec;
  std::string out = cat("R", num(r.id), " ", r.backend, ": heads ", num(s.heads));
  if (s.kv_heads > 0) out += cat(" (kv ", num(s.kv_heads), ")");
  out += cat(", seq ", num(s.seq_q));
  if (s.seq_kv > 0) out += cat("x", num(s.seq_kv));
  out += s.width > 0 ? cat(", width ", num(s.width), " (head_dim ", num(s.headDim()), ")") : cat(", head_dim ", num(s.head_dim));
  out += cat(", ", toString(s.dtype), ", ", maskText(s), ", batch ", num(s.batch));
  if (const std::string work = workText(s); !work.empty()) out += cat(", ", work);
  return out;
}

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
    names += cat("S", num(s->info.id), " ", s->info.name);
    any_run = any_run || !s->runs.empty();
  }
  if (names.empty()) return "no sweep yet: press Run (Ctrl+R), or pick a sweep in the Runs dock";
  parts.push_back(names);
  if (!any_run) return cat(names, " \u00b7 no finished point yet");
  using Text = std::string (*)(const WorkloadSpec&);
  // kind, pass and checkpoint each on its own: a train sweep over checkpoints still says "train".
  const Text fixed[] = {[](const WorkloadSpec& s) { return s.kind != WorkloadKind::attention ? std::string(toString(s.kind)) : std::string(); },
                        [](const WorkloadSpec& s) { return s.pass != Pass::forward ? std::string(toString(s.pass)) : std::string(); },
                        [](const WorkloadSpec& s) {
                          return s.checkpoint != Checkpoint::none ? cat("checkpoint ", toString(s.checkpoint)) : std::string();
                        },
                        widthText, [](const WorkloadSpec& s) { return std::string(toString(s.dtype)); }, maskText,
                        [](const WorkloadSpec& s) { return cat("batch ", num(s.batch)); }};
  for (Text text : fixed) {
    const std::string v = common(sweeps, text);
    if (!v.empty()) parts.push_back(v);
  }
  std::vector<std::string> backends;
  for (const auto& s : sweeps)
    if (s)
      for (const RunResult& r : s->runs)
        if (std::find(backends.begin(), backends.end(), r.backend) == backends.end()) backends.push_back(r.backend);
  std::string b;
  for (const auto& id : backends) b += cat(b.empty() ? "" : ", ", id);
  parts.push_back(b);
  std::string out;
  for (const auto& p : parts) out += cat(out.empty() ? "" : " \u00b7 ", p);
  return out;
}

}  // namespace attnscope::ui
