#include "kernels/torch/torch_python.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <vector>
#include <unistd.h>

namespace attnscope::torch {
namespace {

std::mutex g_mu;
std::string g_cli, g_gui;

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// A name without a slash is looked up on PATH, as a shell would.
std::string resolve(const std::string& command) {
  if (command.find('/') != std::string::npos) return executable(command) ? command : std::string();
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    auto candidate = std::filesystem::path(dir.empty() ? "." : dir) / command;
    if (executable(candidate)) return candidate.string();
  }
  return {};
}

std::string exeDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

void setCommandLinePython(const std::string& command) {
  std::lock_guard lock(g_mu);
  g_cli = command;
}

void setGuiPython(const std::string& command) {
  std::lock_guard lock(g_mu);
  g_gui = command;
}

PythonChoice choosePython() {
  PythonChoice c;
  {
    std::lock_guard lock(g_mu);
    const char* env = std::getenv("ATTNSCOPE_PYTHON");
    if (!g_cli.empty()) c = {g_cli, "", "--python", ""};
    else if (env && *env) c = {env, "", "ATTNSCOPE_PYTHON", ""};
    else if (!g_gui.empty()) c = {g_gui, "", "GUI setting", ""};
    else c = {"python3", "", "PATH", ""};
  }
  c.path = resolve(c.command);
  if (c.path.empty()) {
    if (c.source == "PATH")
      c.problem = "python3: not found on PATH (give a Python with torch by --python, ATTNSCOPE_PYTHON or the GUI's "
                  "Python setting)";
    else
      c.problem = c.command + " (from " + c.source + "): " +
                  (c.command.find('/') != std::string::npos ? "no such executable file" : "not found on PATH");
  }
  return c;
}

std::optional<std::string> workerScript(std::string* searched) {
  const char* name = "attnscope_torch_worker.py";
  std::vector<std::string> places;
  if (const char* env = std::getenv("ATTNSCOPE_TORCH_WORKER"); env && *env) places.push_back(env);
  if (std::string dir = exeDir(); !dir.empty()) {
    places.push_back(dir + "/" + name);
    places.push_back(dir + "/../share/attnscope/" + name);
  }
#ifdef ATTNSCOPE_TORCH_WORKER_BUILD_PATH
  places.push_back(ATTNSCOPE_TORCH_WORKER_BUILD_PATH);  // the build tree's copy, for the tests
#endif
  std::error_code ec;
  for (const auto& p : places)
    if (std::filesystem::is_regular_file(p, ec)) return std::filesystem::weakly_canonical(p, ec).string();
  if (searched) {
    searched->clear();
    for (const auto& p : places) *searched += (searched->empty() ? "" : ", ") + p;
  }
  return std::nullopt;
}

double workerTimeout(double fallback) {
  if (const char* env = std::getenv("ATTNSCOPE_TORCH_TIMEOUT"); env && *env) {
    char* end = nullptr;
    double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0) return v;
  }
  return fallback;
}

}  // namespace attnscope::torch
