#pragma once
#include <string>
#include <vector>

#include "app/cli_args.h"

namespace attnscope::cli {

// Each returns the process exit code; UsageError escapes to main (exit 2).
int cmdBackends(const std::vector<std::string>& argv);
int cmdRun(const std::vector<std::string>& argv);
int cmdSweep(const std::vector<std::string>& argv);
int cmdRuns(const std::vector<std::string>& argv);
int cmdShow(const std::vector<std::string>& argv);
int cmdCompare(const std::vector<std::string>& argv);
int cmdExport(const std::vector<std::string>& argv);
int cmdReport(const std::vector<std::string>& argv);
int cmdExplain(const std::vector<std::string>& argv);  // commands_explain.cpp
int cmdCheck(const std::vector<std::string>& argv);
int cmdRecord(const std::vector<std::string>& argv);  // commands_record.cpp

extern const CommandDef kBackendsDef, kRunDef, kSweepDef, kRunsDef, kShowDef, kCompareDef, kExportDef, kReportDef, kExplainDef,
    kCheckDef, kRecordDef;

}  // namespace attnscope::cli
