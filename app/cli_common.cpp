#include "app/cli_common.h"

#include <csignal>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

#include "app/cli_table.h"
#include "core/engine/recorded_sweep.h"
#include "core/spec/spec_fields.h"
#include "kernels/builtin_session.h"

namespace attnscope::cli {


std::vector<OptionDef> specOptions(bool lists) {
  std::vector<OptionDef> out;
  for (const SpecField& f : specFields())
    out.push_back({std::string(f.cli), std::string(f.metavar) + (lists && f.sweepable ? ",..." : ""), std::string(f.help)});
  return out;
}

void throwIfInvalid(const WorkloadSpec& spec) {
  if (auto errs = validate(spec); !errs.empty()) throw UsageError(describe(errs));
}

WorkloadSpec specFromArgs(const Args& args) {
  WorkloadSpec spec;
  std::vector<SpecError> errs;
  if (args.value("width") && args.value("head-dim"))
    throw UsageError("--width and --head-dim are exclusive: head_dim = width / heads");
  for (const SpecField& f : specFields()) {
    const std::string cli(f.cli), field(f.name);
    auto v = args.value(cli);
    if (!v) continue;
    if (v->empty()) {
      errs.push_back({field, *v, "--" + cli + " needs a value (got an empty string)"});
      continue;
    }
    if (v->find(',') != std::string::npos) {
      errs.push_back({field, *v, "--" + cli + " takes one value here; lists are for 'attnscope sweep'"});
      continue;
    }
    if (auto e = setField(spec, field, *v)) errs.push_back(*e);
  }
  if (!errs.empty()) throw UsageError(describe(errs));
  throwIfInvalid(spec);
  return spec;
}

std::string jsonOutput(const nlohmann::json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string defaultDatabaseForHelp() {
  try {
    return defaultDatabasePath();
  } catch (const StoreError&) {
    return "none: HOME is not set";
  }
}

OptionDef dbOption() { return {"db", "FILE", "database file (default: $ATTNSCOPE_DB or " + defaultDatabaseForHelp() + ")"}; }
OptionDef jsonOption() { return {"json", "", "print JSON for scripts instead of tables"}; }
OptionDef checkOption() {
  return {"check", "MODE",
          "accuracy check against the float64 reference: auto (default: every row when that costs about as much as "
          "the run, else sampled), full, sampled, off (stored as not checked)"};
}
CheckMode checkModeFromArgs(const Args& args) {
  const auto text = args.value("check");
  if (args.flag("no-check")) {  // run's older spelling of --check off
    if (text && *text != "off") throw UsageError("--no-check and --check " + *text + " contradict each other");
    return CheckMode::off;
  }
  if (!text) return CheckMode::automatic;
  const auto mode = parseCheckMode(*text);
  if (!mode) throw UsageError("--check: '" + *text + "' is not a check mode (allowed: " + std::string(kCheckModeChoices) + ")");
  return *mode;
}
OptionDef pythonOption() {
  // The GUI's setting is the window's alone: the command line never reads it.
  return {"python", "PATH", "Python with torch for the torch.* backends (default: $ATTNSCOPE_PYTHON, else python3 on PATH)"};
}

void applyPythonOption(const Args& args) {
  if (auto p = args.value("python")) {
    if (p->empty()) throw UsageError("--python: give the path of a Python executable (or a name on PATH)");
    builtinBackendSettings().setCommandLinePython(*p);
  }
  // Refused before anything starts, rather than as every torch point's error.
  if (std::string problem = builtinBackendSettings().settingProblem(); !problem.empty()) throw UsageError(problem);
}

std::string databasePath(const Args& args) {
  if (auto v = args.value("db")) return *v;
  try {
    return defaultDatabasePath();
  } catch (const StoreError& e) {
    throw UsageError(e.what());
  }
}

std::unique_ptr<Store> openStore(const std::string& path, StoreMode mode) {
  try {
    return std::make_unique<Store>(path, mode);
  } catch (const StoreError& e) {
    if (e.kind() == StoreError::Kind::io || e.kind() == StoreError::Kind::full || e.kind() == StoreError::Kind::replaced)
      throw std::runtime_error(e.what());
    throw UsageError(e.what());
  }
}

namespace {
std::atomic<bool> g_interrupted{false};
extern "C" void onInterrupt(int) { g_interrupted.store(true); }
}  // namespace

std::atomic<bool>& interruptFlag() { return g_interrupted; }

InterruptGuard::InterruptGuard() {
  g_interrupted = false;
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
}

InterruptGuard::~InterruptGuard() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

CliSession& session() {
  // The capture-then-backends set-up lives in builtinSession(), shared with the GUI.
  static CliSession* s = [] {
    attnscope::Session& shared = builtinSession();
    return new CliSession{shared.registry(), shared.capture(), shared.notes()};
  }();
  return *s;
}

void CliSession::printNotes() const {
  static bool printed = false;
  if (printed) return;
  printed = true;
  for (const auto& n : notes) std::cerr << "note: " << n << "\n";
}

ItemId parseId(const std::string& text, bool recordings) {
  ItemId id;
  std::string digits = text;
  std::string lower = text.substr(0, 3);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "rec") {
    if (!recordings)
      throw UsageError("'" + printable(text) + "' is a recording: 'show' shows one, this command takes sweeps (S<n>) and runs (R<n>)");
    id.is_recording = true;
    digits = text.substr(3);
  } else if (!text.empty() && (text[0] == 'R' || text[0] == 'r')) {
    id.is_run = true;
    digits = text.substr(1);
  } else if (!text.empty() && (text[0] == 'S' || text[0] == 's')) {
    digits = text.substr(1);
  }
  try {
    size_t used = 0;
    id.id = std::stoll(digits, &used);
    if (used != digits.size() || id.id <= 0 || !std::isdigit(static_cast<unsigned char>(digits[0]))) throw std::invalid_argument("id");
  } catch (const std::exception&) {
    throw UsageError("'" + printable(text) + "' is not an id: use S<n> (or <n>) for a sweep, R<n> for a run" +
                     (recordings ? ", REC<n> for a recording" : "") + " (see attnscope runs)");
  }
  return id;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

std::string sweepNameOption(const Args& args) {
  const std::string name = args.value("name").value_or("");
  if (auto problem = sweepNameProblem(name)) throw UsageError("--name: the name " + *problem);
  return name;
}

}  // namespace attnscope::cli
