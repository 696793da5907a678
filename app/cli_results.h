#pragma once
// How runs look on the terminal: a table of points and the full detail of one run.

#include <ostream>
#include <vector>

#include "app/cli_table.h"
#include "core/run_result.h"

namespace attnscope::cli {

Table resultsTable(const std::vector<RunResult>& runs);
void printRunDetails(const RunResult& r, std::ostream& os);
// "12.3 ms" or "-" when the run has no timing.
std::string timeCell(const RunResult& r);
std::string bytesCell(int64_t bytes);

}  // namespace attnscope::cli
