// attnscope: the GUI with no arguments, headless subcommands otherwise.
// Exit status: 0 success, 2 bad input (reason on stderr), 1 any other failure.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <iostream>

#include "app/cli_common.h"
#include "app/cli_table.h"
#include "app/commands.h"
#include "core/result/environment.h"
#ifdef ATTNSCOPE_HAVE_GUI
#include "ui/gui_entry.h"
#endif

using namespace attnscope;
using namespace attnscope::cli;

namespace {

struct Command {
  const CommandDef* def;
  int (*fn)(const std::vector<std::string>&);
};

const Command kCommands[] = {{&kBackendsDef, cmdBackends}, {&kRunDef, cmdRun},         {&kSweepDef, cmdSweep},
                             {&kRunsDef, cmdRuns},         {&kShowDef, cmdShow},       {&kCompareDef, cmdCompare},
                             {&kExportDef, cmdExport},     {&kReportDef, cmdReport},
                             {&kExplainDef, cmdExplain},   {&kFrontierDef, cmdFrontier}, {&kRecordDef, cmdRecord},   {&kCheckDef, cmdCheck},
                             {&kMergeDef, cmdMerge},       {&kSlurmDef, cmdSlurm}};

const CommandDef kGuiDef{"gui", "gui [--db FILE]", "Open the desktop application on a database.", {dbOption()}, 0, {}};

// The summary up to its first ". " (a summary of one sentence is whole).
std::string firstSentence(const std::string& summary) {
  const size_t end = summary.find(". ");
  return end == std::string::npos ? summary : summary.substr(0, end + 1);
}

#ifdef ATTNSCOPE_HAVE_GUI
bool envSet(const char* name) {
  const char* v = std::getenv(name);
  return v && *v;
}
#endif

void printUsage(std::ostream& os) {
  os << "AttnScope " << appVersion() << ": profile attention memory and time across backends.\n\n"
     << "usage: attnscope                 open the desktop application\n"
     << "       attnscope COMMAND [OPTIONS]\n\ncommands:\n";
  for (const auto& c : kCommands) os << "  " << c.def->name << std::string(10 - c.def->name.size(), ' ') << firstSentence(c.def->summary) << "\n";
  os << "  gui       " << kGuiDef.summary << "\n\n"
     << "Run 'attnscope COMMAND --help' for a command's options. Results are saved to " << defaultDatabaseForHelp()
     << "\n(override with --db or ATTNSCOPE_DB).\n\nGuide: " << guideSection("") << "\n";
}

int runGuiCommand(int argc, char** argv, const std::vector<std::string>& rest) {
  Args args(kGuiDef, rest);
#ifdef ATTNSCOPE_HAVE_GUI
  // Qt aborts (exit 134) when it finds no display; say what to do instead.
  if (!envSet("QT_QPA_PLATFORM") && !envSet("DISPLAY") && !envSet("WAYLAND_DISPLAY")) {
    std::cerr << "error: no display (DISPLAY and WAYLAND_DISPLAY are not set), so the desktop application cannot "
                 "open.\nRun headless commands instead (attnscope --help: run, sweep, report, export), or set "
                 "QT_QPA_PLATFORM=offscreen for a window without a screen.\n";
    return 2;
  }
  const bool explicitPath = args.value("db").has_value() || std::getenv("ATTNSCOPE_DB") != nullptr;
  return runGui(argc, argv, databasePath(args), explicitPath);
#else
  (void)argc;
  (void)argv;
  std::cerr << "error: this build has no GUI (configured with ATTNSCOPE_GUI=OFF); see 'attnscope --help'\n";
  return 1;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  // Past the file size limit (`ulimit -f`) a write then fails with EFBIG, which every writer
  // reports and cleans up after like a full disk, instead of SIGXFSZ ending the process silently.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty()) return runGuiCommand(argc, argv, {});
    const std::string cmd = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      printUsage(std::cout);
      return 0;
    }
    if (cmd == "--version") {
      std::cout << "attnscope " << appVersion() << " (" << gitRevision() << ")\n";
      return 0;
    }
    const bool wantsHelp = std::find(rest.begin(), rest.end(), "--help") != rest.end() ||
                           std::find(rest.begin(), rest.end(), "-h") != rest.end();
    if (cmd == "gui") {
      if (wantsHelp) {
        std::cout << helpText(kGuiDef);
        return 0;
      }
      return runGuiCommand(argc, argv, rest);
    }
    for (const auto& c : kCommands) {
      if (c.def->name != cmd) continue;
      if (wantsHelp) {
        std::cout << helpText(*c.def);
        return 0;
      }
      return c.fn(rest);
    }
    std::cerr << "error: unknown command '" << cmd << "'\n\n";
    printUsage(std::cerr);
    return 2;
  } catch (const UsageError& e) {
    // One line per problem (a spec can have several), each escaped on its own.
    const std::string what = e.what();
    for (size_t begin = 0; begin <= what.size();) {
      const size_t end = std::min(what.find('\n', begin), what.size());
      std::cerr << "error: " << printable(what.substr(begin, end - begin)) << "\n";
      begin = end + 1;
    }
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << printable(e.what()) << "\n";
    return 1;
  }
}
