#pragma once
#include <string>
#include <vector>

#include "app/cli_args.h"
#include "core/spec/sweep_spec.h"

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
int cmdMerge(const std::vector<std::string>& argv);   // commands_cluster.cpp
int cmdSlurm(const std::vector<std::string>& argv);   // commands_cluster.cpp
int cmdFrontier(const std::vector<std::string>& argv);  // commands_frontier.cpp

// The sweep that `sweep`'s options describe (SPEC lists, --backends, --from, --spec-file, ...),
// expanded once to check it. Throws UsageError.
SweepSpec sweepSpecFromArgs(const Args& args);
// `sweep --slurm`: writes and submits (or with --dry-run prints) the job array. commands_cluster.cpp.
int submitSlurmSweep(const Args& args, const SweepSpec& sweep);

extern const CommandDef kBackendsDef, kRunDef, kSweepDef, kRunsDef, kShowDef, kCompareDef, kExportDef, kReportDef, kExplainDef,
    kCheckDef, kRecordDef, kMergeDef, kSlurmDef, kFrontierDef;

}  // namespace attnscope::cli
