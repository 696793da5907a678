#pragma once
// How runs look on the terminal: a table of points and the full detail of one run.

#include <ostream>
#include <vector>

#include "app/cli_table.h"
#include "core/engine/recorded_sweep.h"
#include "core/result/run_result.h"
#include "core/spec/spec_fields.h"

namespace attnscope::cli {

Table resultsTable(const std::vector<RunResult>& runs);
// The spec columns of a table of these runs (core/spec/spec_fields.h): the fields with a terminal
// header, plus any field some run sets to other than its default (pass train, a fixed width), so
// two points that differ only there are told apart.
std::vector<const SpecField*> specColumns(const std::vector<RunResult>& runs);
std::string columnHeader(const SpecField& f);
void printRunDetails(const RunResult& r, std::ostream& os);
// "12.3 ms" or "-" when the run has no timing.
std::string timeCell(const RunResult& r);
std::string bytesCell(int64_t bytes);
// What a run's io_bytes counts, by kind and pass: "Q+K+V+O+mask", "... +G+dQ+dK+dV" for train.
std::string ioLabel(const WorkloadSpec& s);
// A sweep's exit status, saying on stderr why it is not 0: 0 when every point ran as it could
// (ok, or what exploring a grid finds: oom, unsupported, skipped by the budget); 1 when any
// point failed (wrong: its accuracy check failed; error) or the sweep was cancelled.
int sweepExitStatus(const RecordedSweepResult& result);

}  // namespace attnscope::cli
