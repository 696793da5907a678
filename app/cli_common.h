#pragma once
// Pieces every command shares: the spec options, the database, the backends, ids, output.

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli_args.h"
#include "core/backend/backend_registry.h"
#include "core/check/check_policy.h"
#include "core/store/store.h"
#include "core/trace/trace_capture.h"
#include "core/spec/workload_spec.h"

namespace attnscope::cli {

// The SPEC options shared by backends, run, sweep and explain: one per field of the table in
// core/spec/spec_fields.h (with lists, sweepable fields take "V,...").
std::vector<OptionDef> specOptions(bool lists);
// The spec from the SPEC options (single values). Throws UsageError listing every bad field.
WorkloadSpec specFromArgs(const Args& args);
void throwIfInvalid(const WorkloadSpec& spec);

OptionDef dbOption();
OptionDef jsonOption();
// --check auto|full|sampled|off (core/check/check_policy.h); auto when absent. Throws UsageError.
OptionDef checkOption();
CheckMode checkModeFromArgs(const Args& args);
// --python PATH: the Python (with torch) the torch.* backends run in and explain asks. Must be
// applied before the first use of session(). Also refuses a bad $ATTNSCOPE_TORCH_TIMEOUT (UsageError).
OptionDef pythonOption();
void applyPythonOption(const Args& args);
// --db, else ATTNSCOPE_DB, else the default path.
std::string databasePath(const Args& args);
// JSON for scripts (indented). Text that is not UTF-8 (a path given as bytes, a name from an old
// or foreign file) comes out as U+FFFD instead of failing the whole output.
std::string jsonOutput(const nlohmann::json& j);
// The default database for help texts (says so when there is none).
std::string defaultDatabaseForHelp();
// --name: a sweep name (empty when not given or empty: the default name); UsageError when
// sweepNameProblem refuses it.
std::string sweepNameOption(const Args& args);
// Opens the store; refusals (not a database, newer, read-only for a write, a folder) become
// UsageError (bad input), I/O failures and a full disk runtime_error. Read commands pass
// StoreMode::read: they never write and leave no side files.
std::unique_ptr<Store> openStore(const std::string& path, StoreMode mode = StoreMode::create);

// Backends of this build, plus device-side trace capture where the build has it. Notes such as
// "GPU backends unavailable: <reason>" and "CUPTI unavailable: <reason>" are printed once to stderr.
// The process's attnscope::Session (kernels/builtin_session.h), seen the way the commands use it.
// Ctrl-C and SIGTERM set interruptFlag() while an InterruptGuard lives (the run in flight is
// cancelled; finished points stay saved); the default dispositions come back with it.
std::atomic<bool>& interruptFlag();
struct InterruptGuard {
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
};

struct CliSession {
  BackendRegistry& registry;
  TraceCapture* capture = nullptr;  // process-wide, never destroyed
  std::vector<std::string> notes;
  void printNotes() const;
};
CliSession& session();

struct ItemId {
  bool is_run = false;
  bool is_recording = false;
  int64_t id = 0;
  std::string text() const { return (is_recording ? "REC" : is_run ? "R" : "S") + std::to_string(id); }
};
// "S3" or "3": sweep 3; "R17": run 17; "REC2": recording 2 where `recordings` is set (show takes
// one, the commands of sweeps and runs refuse it). Throws UsageError.
ItemId parseId(const std::string& text, bool recordings = false);

std::string join(const std::vector<std::string>& items, const std::string& sep);

}  // namespace attnscope::cli
