#pragma once
// Running the user's program for `attnscope record`: started with this process's stdin and
// stdout, in the same process group (so job control and the terminal behave as with `python
// script.py`), its stderr passed through byte for byte while the last lines are kept for the
// recording. A SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to AttnScope alone (kill, a batch system)
// is passed on to the program; one from the terminal (Ctrl-C) already reached the program, so it
// is not sent twice. Either way the program decides how it ends, and AttnScope waits for it.
// POSIX only.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnscope {

struct ProgramLaunch {
  std::vector<std::string> argv;                            // argv[0] is the executable's path
  std::vector<std::pair<std::string, std::string>> env;    // set on top of this process's environment
};

struct ProgramExit {
  std::optional<int> status;  // nullopt: killed by `signal`
  int signal = 0;
  bool interrupted = false;   // a SIGINT, SIGTERM, SIGHUP or SIGQUIT arrived while it ran
  std::string stderr_tail;    // the last lines (at most 8 KiB) it wrote to stderr
  int64_t started_unix_ms = 0, ended_unix_ms = 0;
};

// Runs the program to its end. Throws std::runtime_error when it cannot be started (the message
// names the executable and the reason).
ProgramExit runProgram(const ProgramLaunch& launch);

}  // namespace attnscope
