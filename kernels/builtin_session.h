#pragma once
// The process's Session (core/engine/session.h) with this build's capture and backends: CUPTI when
// the build has it, then registerBuiltinBackends. Made on first use; the CLI and the GUI share
// this one function so their set-up cannot drift apart. Beside it, what the front ends may tell
// or ask the backends without naming them.

#include "core/backend/backend_settings.h"
#include "core/engine/session.h"
#include "core/torch_dispatch/installed_torch.h"

#include <string>

namespace attnscope {

Session& builtinSession();

// Every backend folder's settings (core/backend/backend_settings.h) as one, without making the
// session (no CUPTI, no device probe): a front end sets the Python, background checks, Ctrl-C's
// flag and the availability listener here, and names no backend library.
BackendSettings& builtinBackendSettings();

// The torch the torch backends use, for `explain --torch installed` and `--gpu detected`: asked
// through their own probe, so explain and `attnscope backends` cannot ask different Pythons.
torch_dispatch::InstalledTorch builtinInstalledTorch();

// The Python the torch backends use and the recorder script shipped beside their worker, for
// `attnscope record`: the same discovery, so a recording runs in the Python `backends` shows.
struct RecorderPython {
  std::string python;   // the executable's path; empty when none was found
  std::string shown;    // printable, for messages
  std::string source;   // "--python", "ATTNSCOPE_PYTHON", "PATH"
  std::string script;   // attnscope_record.py; empty when not found
  std::string problem;  // why it cannot record; "" when both were found
};
RecorderPython builtinRecorderPython();

}  // namespace attnscope
