#include "core/result/run_result.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include <nlohmann/json.hpp>

namespace attnscope {
namespace {
// JSON has no Inf: a non-finite error is written as null and read back as +inf, so a failed
// check never turns into a passing 0 on a round trip.
double errorFromJson(const nlohmann::json& a, const char* key) {
  auto it = a.find(key);
  if (it == a.end()) return 0.0;
  return it->is_number() ? it->get<double>() : INFINITY;
}
}  // namespace

std::string_view toString(RunStatus s) {
  switch (s) {
    case RunStatus::ok: return "ok";
    case RunStatus::unsupported: return "unsupported";
    case RunStatus::oom: return "oom";
    case RunStatus::error: return "error";
    case RunStatus::cancelled: return "cancelled";
    case RunStatus::skipped: return "skipped";
    case RunStatus::wrong: return "wrong";
  }
  return "?";
}

std::optional<RunStatus> parseRunStatus(std::string_view s) {
  for (auto st : {RunStatus::ok, RunStatus::unsupported, RunStatus::oom, RunStatus::error, RunStatus::cancelled,
                  RunStatus::skipped, RunStatus::wrong})
    if (toString(st) == s) return st;
  return std::nullopt;
}

std::string statusText(const RunResult& r) {
  if (r.status != RunStatus::ok || r.accuracy.everyRow()) return std::string(toString(r.status));
  return "ok, " + checkCoverage(r.accuracy);
}

nlohmann::json toJson(const RunResult& r) {
  nlohmann::json j;
  j["id"] = r.id;
  j["spec"] = toJson(r.spec);
  j["summary"] = summary(r.spec);
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["status"] = toString(r.status);
  j["status_text"] = statusText(r);
  j["message"] = r.message;
  j["timing"] = {{"warmup", r.timing.warmup}, {"reps", r.timing.reps}, {"median_s", r.timing.median_s},
                 {"min_s", r.timing.min_s},   {"max_s", r.timing.max_s}, {"samples_s", r.timing.samples_s}};
  j["flops"] = r.flops;
  j["flops_per_second"] = r.flopsPerSecond();
  j["memory"] = {{"predicted_peak", r.memory.predicted_peak}, {"measured_peak", r.memory.measured_peak},
                 {"cupti_peak", r.memory.cupti_peak},         {"io_bytes", r.memory.io_bytes},
                 {"overhead", r.memory.overhead()},           {"available", r.memory.available}};
  j["plan"] = toJson(r.plan);
  j["accuracy"] = {{"checked", r.accuracy.checked},         {"max_abs_error", r.accuracy.max_abs_error},
                   {"rel_l2_error", r.accuracy.rel_l2_error}, {"rows_checked", r.accuracy.rows_checked},
                   {"rows_total", r.accuracy.rows_total},   {"tolerance", r.accuracy.tolerance},
                   {"passed", r.accuracy.passed()},         {"checked_fraction", r.accuracy.checkedFraction()}};
  j["trace"] = {{"events", r.trace.events.size()}, {"capture_note", r.trace.capture_note},
                {"dropped_records", r.trace.dropped_records}};
  j["facts"] = r.facts;
  j["started_unix_ms"] = r.started_unix_ms;
  j["wall_s"] = r.wall_s;
  return j;
}

RunResult runResultFromJson(const nlohmann::json& j) {
  RunResult r;
  r.id = j.value("id", int64_t{0});
  r.spec = workloadSpecFromJson(j.at("spec"));
  r.backend = j.value("backend", "");
  r.device = j.value("device", "");
  r.status = parseRunStatus(j.value("status", "error")).value_or(RunStatus::error);
  r.message = j.value("message", "");
  if (auto t = j.find("timing"); t != j.end()) {
    r.timing.warmup = t->value("warmup", 0);
    r.timing.reps = t->value("reps", 0);
    r.timing.median_s = t->value("median_s", 0.0);
    r.timing.min_s = t->value("min_s", 0.0);
    r.timing.max_s = t->value("max_s", 0.0);
    r.timing.samples_s = t->value("samples_s", std::vector<double>{});
  }
  r.flops = j.value("flops", 0.0);
  if (auto m = j.find("memory"); m != j.end()) {
    r.memory.predicted_peak = m->value("predicted_peak", int64_t{-1});
    r.memory.measured_peak = m->value("measured_peak", int64_t{-1});
    r.memory.cupti_peak = m->value("cupti_peak", int64_t{-1});
    r.memory.io_bytes = m->value("io_bytes", int64_t{0});
    r.memory.available = m->value("available", int64_t{-1});
  }
  if (auto p = j.find("plan"); p != j.end()) r.plan = memoryPlanFromJson(*p);
  if (auto a = j.find("accuracy"); a != j.end()) {
    r.accuracy.checked = a->value("checked", false);
    r.accuracy.max_abs_error = errorFromJson(*a, "max_abs_error");
    r.accuracy.rel_l2_error = errorFromJson(*a, "rel_l2_error");
    r.accuracy.rows_checked = a->value("rows_checked", int64_t{0});
    r.accuracy.rows_total = a->value("rows_total", int64_t{0});
    r.accuracy.tolerance = a->value("tolerance", 0.0);
  }
  if (auto t = j.find("trace"); t != j.end()) {
    r.trace.capture_note = t->value("capture_note", "");
    r.trace.dropped_records = t->value("dropped_records", int64_t{0});
  }
  r.facts = j.value("facts", std::map<std::string, std::string>{});
  r.started_unix_ms = j.value("started_unix_ms", int64_t{0});
  r.wall_s = j.value("wall_s", 0.0);
  return r;
}

std::vector<RankStats> rankStats(const RunResult& r) {
  std::vector<RankStats> out;
  const auto it = r.facts.find("tp.ranks");
  if (it == r.facts.end()) return out;
  const auto number = [&](const std::string& key) -> std::optional<double> {
    const auto f = r.facts.find(key);
    if (f == r.facts.end()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(f->second.c_str(), &end);
    if (end == f->second.c_str() || *end != '\0' || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
  };
  const std::optional<double> n = number("tp.ranks");
  if (!n || *n < 1 || *n > 1024) return out;
  for (int rank = 0; rank < static_cast<int>(*n); ++rank) {
    const std::string at = "tp.rank" + std::to_string(rank) + ".";
    RankStats k;
    k.rank = rank;
    if (auto v = number(at + "peak_bytes")) k.peak_bytes = static_cast<int64_t>(*v);
    if (auto v = number(at + "seconds")) k.seconds = *v;
    if (auto v = number(at + "comm_share"); v && *v <= 1) k.comm_share = *v;
    out.push_back(k);
  }
  return out;
}

}  // namespace attnscope
