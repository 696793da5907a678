#pragma once
// Which Python runs the torch backends and answers `explain --torch installed`, and where the
// worker script is. The one place that decides it: the backends, their probe and explain all ask
// choosePython(), so they cannot ask different Pythons.
//
// The Python is the first of: --python PATH (CLI), $ATTNSCOPE_PYTHON, the GUI's setting (only
// the window has one), python3 on PATH. The worker script ships with AttnScope:
// $ATTNSCOPE_TORCH_WORKER, else next to the attnscope binary (the build tree), else
// <prefix>/share/attnscope (cmake --install).
//
// Paths are bytes: the command and path are kept as given (and started as such); shown() is the
// form for messages, valid UTF-8 with any other byte as \xNN.

#include <optional>
#include <string>

#include "core/base/utf8_text.h"

namespace attnscope::torch {

struct PythonChoice {
  std::string command;  // as the user named it: "python3", "/opt/venv/bin/python"
  std::string path;     // resolved executable; empty when not found
  std::string source;   // "--python", "ATTNSCOPE_PYTHON", "GUI setting", "PATH"
  std::string problem;  // why it cannot be used (printable); empty when path is set
  std::string shown() const { return validUtf8(command); }
};

// Process-wide choices; empty clears. Thread-safe.
void setCommandLinePython(const std::string& command);
void setGuiPython(const std::string& command);
PythonChoice choosePython();

// The worker script, or nullopt with the places searched in `searched`.
std::optional<std::string> workerScript(std::string* searched = nullptr);
// The recorder (attnscope_record.py, for `attnscope record`), shipped beside the worker script:
// next to the attnscope binary, else <prefix>/share/attnscope, else the build tree's copy.
std::optional<std::string> recorderScript(std::string* searched = nullptr);
// The program that starts the worker (process_keeper.h), shipped with AttnScope: next to the
// attnscope binary, else <prefix>/libexec/attnscope (cmake --install), else the build tree's.
std::optional<std::string> keeperProgram(std::string* searched = nullptr);

// Seconds to wait for a worker's answer: $ATTNSCOPE_TORCH_TIMEOUT, else `fallback`. Throws
// std::invalid_argument with torchTimeoutProblem() when the variable is set but not valid.
double workerTimeout(double fallback);
// Why $ATTNSCOPE_TORCH_TIMEOUT cannot be used (naming it and the allowed values), or "" when it
// is unset or valid. Front ends refuse a bad one before they start (the CLI exits 2).
std::string torchTimeoutProblem();
inline constexpr double kMaxTorchTimeout = 86400;  // one day: a limit, not a wish

}  // namespace attnscope::torch
