#pragma once
// Data exports shared by the CLI and the GUI: CSV (one row per point) and JSON.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result/environment.h"
#include "core/result/run_result.h"
#include "core/store/store.h"

namespace attnscope {

std::vector<std::string> csvColumns();
std::vector<std::string> csvRow(const RunResult& r);
// Header plus one row per run; RFC 4180 quoting.
std::string runsToCsv(const std::vector<RunResult>& runs);
std::string csvEscape(const std::string& field);

// {"sweep": {...}, "environment": {...}, "runs": [...]}
nlohmann::json sweepToJson(const SweepInfo& sweep, const Environment& env, const std::vector<RunResult>& runs);

}  // namespace attnscope
