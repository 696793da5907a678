#pragma once
// Which Python runs the torch backends, and where the worker script is.
//
// The Python is the first of: --python PATH (CLI), $ATTNSCOPE_PYTHON, the GUI's setting,
// python3 on PATH. The worker script ships with AttnScope: $ATTNSCOPE_TORCH_WORKER, else next
// to the attnscope binary (the build tree), else <prefix>/share/attnscope (cmake --install).

#include <optional>
#include <string>

namespace attnscope::torch {

struct PythonChoice {
  std::string command;  // as the user named it: "python3", "/opt/venv/bin/python"
  std::string path;     // resolved executable; empty when not found
  std::string source;   // "--python", "ATTNSCOPE_PYTHON", "GUI setting", "PATH"
  std::string problem;  // why it cannot be used; empty when path is set
};

// Process-wide choices; empty clears. Thread-safe.
void setCommandLinePython(const std::string& command);
void setGuiPython(const std::string& command);
PythonChoice choosePython();

// The worker script, or nullopt with the places searched in `searched`.
std::optional<std::string> workerScript(std::string* searched = nullptr);

// Seconds to wait for a worker's answer: $ATTNSCOPE_TORCH_TIMEOUT, else `fallback`.
double workerTimeout(double fallback);

}  // namespace attnscope::torch
