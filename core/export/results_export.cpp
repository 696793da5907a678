#include "core/export/results_export.h"

#include <initializer_list>
#include <sstream>

#include "core/spec/spec_fields.h"

namespace attnscope {

// Spec columns come from the field table (core/spec/spec_fields.h), between the run's identity and
// its measurements.
std::vector<std::string> csvColumns() {
  std::vector<std::string> cols = {"run_id", "backend", "device", "status"};
  for (const SpecField& f : specFields()) cols.emplace_back(f.csv_column);
  for (const char* c : {"median_s", "min_s", "max_s", "flops_per_s", "predicted_peak_bytes", "measured_peak_bytes",
                        "cupti_peak_bytes", "io_bytes", "overhead_bytes", "max_abs_error", "rel_l2_error",
                        "accuracy_passed", "checked_fraction", "message"})
    cols.emplace_back(c);
  return cols;
}

std::vector<std::string> csvRow(const RunResult& r) {
  auto num = [](double v) {
    std::ostringstream os;
    os.precision(9);
    os << v;
    return os.str();
  };
  const bool ok = r.status == RunStatus::ok;
  std::vector<std::string> row = {std::to_string(r.id), r.backend, r.device, std::string(toString(r.status))};
  for (const SpecField& f : specFields()) row.push_back(f.cell(r.spec));
  for (std::string cell : std::initializer_list<std::string>{ok ? num(r.timing.median_s) : "",
                           ok ? num(r.timing.min_s) : "",
                           ok ? num(r.timing.max_s) : "",
                           ok ? num(r.flopsPerSecond()) : "",
                           r.memory.predicted_peak >= 0 ? std::to_string(r.memory.predicted_peak) : "",
                           r.memory.measured_peak > 0 ? std::to_string(r.memory.measured_peak) : "",
                           r.memory.cupti_peak >= 0 ? std::to_string(r.memory.cupti_peak) : "",
                           std::to_string(r.memory.io_bytes),
                           r.memory.measured_peak > 0 ? std::to_string(r.memory.overhead()) : "",
                           r.accuracy.checked ? num(r.accuracy.max_abs_error) : "",
                           r.accuracy.checked ? num(r.accuracy.rel_l2_error) : "",
                           r.accuracy.checked ? (r.accuracy.passed() ? "true" : "false") : "",
                           r.accuracy.checked ? num(r.accuracy.checkedFraction()) : ok ? "0" : "",
                           r.message})
    row.push_back(std::move(cell));
  return row;
}

std::string csvEscape(const std::string& f) {
  if (f.find_first_of(",\"\n\r") == std::string::npos) return f;
  std::string out = "\"";
  for (char c : f) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string runsToCsv(const std::vector<RunResult>& runs) {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + csvEscape(cells[i]);
    out += "\n";
  };
  line(csvColumns());
  for (const auto& r : runs) line(csvRow(r));
  return out;
}

nlohmann::json sweepToJson(const SweepInfo& sw, const Environment& env, const std::vector<RunResult>& runs) {
  nlohmann::json j;
  j["sweep"] = {{"id", sw.id},           {"name", sw.name}, {"created_unix_ms", sw.created_unix_ms},
                {"state", sw.state},     {"notes", sw.notes}, {"tags", sw.tags},
                {"spec", sw.spec},       {"run_count", sw.run_count}};
  j["environment"] = toJson(env);
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) j["runs"].push_back(toJson(r));
  return j;
}

}  // namespace attnscope
