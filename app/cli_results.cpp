#include "app/cli_results.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <iostream>

#include "core/base/format.h"
#include "core/spec/spec_fields.h"

namespace attnscope::cli {

std::string timeCell(const RunResult& r) {
  return r.status == RunStatus::ok && r.timing.median_s > 0 ? formatDuration(r.timing.median_s) : "-";
}

std::string bytesCell(int64_t bytes) { return bytes >= 0 ? formatBytes(bytes) : "-"; }

namespace {
std::string errorCell(const RunResult& r) {
  if (!r.accuracy.checked) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e%s", r.accuracy.max_abs_error, r.accuracy.passed() ? "" : " FAIL");
  return buf;
}
}  // namespace

std::vector<const SpecField*> specColumns(const std::vector<RunResult>& runs) {
  const WorkloadSpec defaults;
  std::vector<const SpecField*> shown;
  for (const SpecField& f : specFields()) {
    const bool varied = std::any_of(runs.begin(), runs.end(), [&](const RunResult& r) { return f.format(r.spec) != f.format(defaults); });
    if (!f.table_header.empty() || varied) shown.push_back(&f);
  }
  return shown;
}

std::string columnHeader(const SpecField& f) { return std::string(f.table_header.empty() ? f.name : f.table_header); }

Table resultsTable(const std::vector<RunResult>& runs) {
  const std::vector<const SpecField*> shown = specColumns(runs);
  std::vector<std::string> header = {"id", "backend"};
  for (const SpecField* f : shown) header.push_back(columnHeader(*f));
  for (const char* h : {"status", "time", "GFLOP/s", "predicted", "measured", "max err", "note"}) header.emplace_back(h);
  Table t(header);
  for (const auto& r : runs) {
    char gf[32] = "-";
    if (r.status == RunStatus::ok && r.flopsPerSecond() > 0) std::snprintf(gf, sizeof gf, "%.1f", r.flopsPerSecond() / 1e9);
    std::string note = r.status == RunStatus::ok ? r.message : r.message.substr(0, 70);
    if (auto ran = r.facts.find("torch.ran"); ran != r.facts.end())
      note = "torch ran: " + ran->second + (note.empty() ? "" : "; " + note);
    std::vector<std::string> row = {r.id ? "R" + std::to_string(r.id) : "-", r.backend};
    for (const SpecField* f : shown) row.push_back(f->cell(r.spec));
    for (std::string cell : std::initializer_list<std::string>{statusText(r), timeCell(r), std::string(gf), bytesCell(r.memory.predicted_peak),
                             bytesCell(r.status == RunStatus::ok ? r.memory.measured_peak : -1), errorCell(r), note})
      row.push_back(std::move(cell));
    t.add(row);
  }
  return t;
}

std::string percentOfTime(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %% of its time", 100.0 * share);
  return buf;
}

std::string ioLabel(const WorkloadSpec& s) {
  const bool train = s.pass == Pass::train;
  if (s.kind == WorkloadKind::layer) return train ? "x+weights+y+mask+G+grads" : "x+weights+y+mask";
  return train ? "Q+K+V+O+mask+G+dQ+dK+dV" : "Q+K+V+O+mask";
}

void printRunDetails(const RunResult& r, std::ostream& os) {
  const auto line = [&](const std::string& k, const std::string& v) { os << "  " << k << std::string(k.size() < 18 ? 18 - k.size() : 1, ' ') << printable(v) << "\n"; };
  os << (r.id ? "run R" + std::to_string(r.id) : std::string("run")) << ": " << printable(r.backend + " on " + r.device) << "\n";
  line("spec", summary(r.spec));
  line("scale", std::to_string(r.spec.effectiveScale()));
  line("status", statusText(r) + (r.message.empty() ? "" : ": " + r.message));
  if (r.status == RunStatus::ok) {
    line("time (median)", formatDuration(r.timing.median_s) + "  (min " + formatDuration(r.timing.min_s) + ", max " +
                              formatDuration(r.timing.max_s) + "; " + std::to_string(r.timing.warmup) + " warm-up, " +
                              std::to_string(r.timing.reps) + " reps)");
    line("throughput", formatFlops(r.flopsPerSecond()));
  }
  if (auto ran = r.facts.find("torch.ran"); ran != r.facts.end()) line("torch ran", ran->second);
  // A tensor-parallel run's ranks are a table below, not a list of tp.rank<r>.* facts.
  const std::vector<RankStats> ranks = rankStats(r);
  for (const auto& [key, value] : r.facts)
    if (key != "torch.ran" && !(key.starts_with("tp.rank") && !ranks.empty())) line(key, value);
  if (!ranks.empty()) {
    os << "  ranks             rank  peak        time (median)  communication\n";
    for (const RankStats& k : ranks) {
      char row[160];
      std::snprintf(row, sizeof row, "                    %4d  %-10s  %-13s  %s\n", k.rank,
                    k.peak_bytes >= 0 ? formatBytes(k.peak_bytes).c_str() : "-",
                    k.seconds >= 0 ? formatDuration(k.seconds).c_str() : "-",
                    k.comm_share >= 0 ? percentOfTime(k.comm_share).c_str() : "-");
      os << row;
    }
  }
  os << "  memory\n";
  line("  predicted peak", r.plan.known ? bytesCell(r.memory.predicted_peak) : "unknown (" + r.plan.unknown_reason + ")");
  // A torch run's peak is torch's own (profiler memory events on the CPU, max_memory_allocated on a GPU).
  const bool torchRun = r.facts.count("torch") > 0;
  // Torch measures its peak in its profiled call only: a run that ended before it (the worker died,
  // torch refused) knows none, and says so rather than showing 0 B and a negative overhead.
  const std::string peak = torchRun && r.memory.measured_peak < 0
                               ? "not measured (the run ended before torch's profiled call; see status)"
                               : bytesCell(r.memory.measured_peak);
  line(torchRun ? (r.device == "cpu" ? "  torch peak" : "  torch max alloc") : "  allocator peak", peak +
                               (r.memory.measured_peak >= 0 && r.memory.predicted_peak >= 0
                                    ? "  (measured - predicted = " + std::to_string(r.memory.measured_peak - r.memory.predicted_peak) + " B)"
                                    : ""));
  line("  CUPTI peak", r.device == "cpu" ? std::string("n/a (host memory)") : r.memory.cupti_peak >= 0 ? formatBytes(r.memory.cupti_peak) +
                                                      (r.memory.measured_peak >= 0 ? "  (CUPTI - allocator = " + formatBytes(r.memory.cupti_peak - r.memory.measured_peak) + ")" : "")
                                                : std::string("not captured") + (r.trace.capture_note.empty() ? "" : " (" + r.trace.capture_note + ")"));
  line("  " + ioLabel(r.spec), formatBytes(r.memory.io_bytes));
  if (r.memory.measured_peak >= 0) line("  overhead", formatBytes(r.memory.overhead()));
  if (!r.plan.buffers.empty()) {
    os << "  plan (peak at step '" << (r.plan.steps.empty() ? "" : r.plan.stepName(r.plan.peakStep())) << "')\n";
    for (const auto& b : r.plan.buffers) {
      std::string life = r.plan.steps.empty() ? "" : r.plan.lifetime(b);
      line("    " + b.name, formatBytes(b.bytes) + "  " + std::string(toString(b.role)) + "  " + life);
    }
  }
  if (r.accuracy.checked || r.status == RunStatus::ok) line("accuracy", accuracySummary(r.accuracy));
  line("trace", std::to_string(r.trace.events.size()) + " events" +
                    (r.trace.dropped_records ? ", " + std::to_string(r.trace.dropped_records) + " CUPTI records dropped" : ""));
}

int sweepExitStatus(const RecordedSweepResult& result) {
  const std::string where = " in sweep S" + std::to_string(result.sweep_id);
  if (result.cancelled()) {
    const size_t in_flight = result.count({RunStatus::cancelled});
    std::cerr << "cancelled: " << result.runs.size() - in_flight << " finished points"
              << (in_flight ? " (and the one in flight, as cancelled)" : "") << " are saved" << where << "\n";
    return 1;
  }
  const size_t wrong = result.count({RunStatus::wrong}), error = result.count({RunStatus::error});
  if (wrong + error == 0) return 0;
  std::cerr << "error: " << wrong + error << " of " << result.runs.size() << " points failed" << where << " (";
  if (wrong) std::cerr << wrong << " wrong: failed the accuracy check" << (error ? "; " : "");
  if (error) std::cerr << error << " error";
  std::cerr << ")\n";
  return 1;
}

}  // namespace attnscope::cli
