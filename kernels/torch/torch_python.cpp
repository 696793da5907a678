#include "kernels/torch/torch_python.h"

#include "core/files/command_path.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <stdexcept>
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


// The first of `places` that is a regular file (and executable, if asked), as a canonical path;
// else nullopt with the places in `searched`.
std::optional<std::string> firstFile(const std::vector<std::string>& places, std::string* searched, bool run) {
  std::error_code ec;
  for (const auto& p : places)
    if (run ? executable(p) : std::filesystem::is_regular_file(p, ec)) return std::filesystem::weakly_canonical(p, ec).string();
  if (searched) {
    searched->clear();
    for (const auto& p : places) *searched += (searched->empty() ? "" : ", ") + p;
  }
  return std::nullopt;
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
  c.path = resolveCommand(c.command);
  if (c.path.empty()) {
    if (c.source == "PATH")
      c.problem = "python3: not found on PATH (give a Python with torch by --python, ATTNSCOPE_PYTHON or the GUI's "
                  "Python setting)";
    else
      c.problem = c.shown() + " (from " + c.source + "): " +
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
  return firstFile(places, searched, false);
}

std::optional<std::string> recorderScript(std::string* searched) {
  const char* name = "attnscope_record.py";
  std::vector<std::string> places;
  if (std::string dir = exeDir(); !dir.empty()) {
    places.push_back(dir + "/" + name);
    places.push_back(dir + "/../share/attnscope/" + name);
  }
#ifdef ATTNSCOPE_TORCH_WORKER_BUILD_PATH
  const std::string worker = ATTNSCOPE_TORCH_WORKER_BUILD_PATH;
  places.push_back(worker.substr(0, worker.rfind('/') + 1) + name);  // the build tree's, for the tests
#endif
  return firstFile(places, searched, false);
}

std::optional<std::string> keeperProgram(std::string* searched) {
  const char* name = "attnscope-torch-keeper";
  std::vector<std::string> places;
  if (std::string dir = exeDir(); !dir.empty()) {
    places.push_back(dir + "/" + name);
    places.push_back(dir + "/../libexec/attnscope/" + name);
  }
#ifdef ATTNSCOPE_TORCH_KEEPER_BUILD_PATH
  places.push_back(ATTNSCOPE_TORCH_KEEPER_BUILD_PATH);  // the build tree's, for the tests
#endif
  return firstFile(places, searched, true);
}

std::string torchTimeoutProblem() {
  const char* env = std::getenv("ATTNSCOPE_TORCH_TIMEOUT");
  if (!env || !*env) return {};  // empty is unset, as for the other variables
  // Plain decimals only: strtod would also take "inf", "nan", "0x1p4" and leading blanks.
  const std::string text = env;
  const size_t dot = text.find('.');
  const std::string whole = text.substr(0, dot), fraction = dot == std::string::npos ? "" : text.substr(dot + 1);
  const bool digits = !whole.empty() && whole.find_first_not_of("0123456789") == std::string::npos &&
                      (dot == std::string::npos || (!fraction.empty() && fraction.find_first_not_of("0123456789") == std::string::npos));
  const double v = digits ? std::strtod(text.c_str(), nullptr) : 0;
  if (digits && v > 0 && v <= kMaxTorchTimeout) return {};
  char max[32];
  std::snprintf(max, sizeof max, "%g", kMaxTorchTimeout);
  return "ATTNSCOPE_TORCH_TIMEOUT='" + validUtf8(text) + "': give the seconds to wait for the torch worker, a number "
         "greater than 0 and at most " + max + " (e.g. 600), or unset it for the defaults (180 s to start, 600 s a request)";
}

double workerTimeout(double fallback) {
  if (std::string problem = torchTimeoutProblem(); !problem.empty()) throw std::invalid_argument(problem);
  if (const char* env = std::getenv("ATTNSCOPE_TORCH_TIMEOUT"); env && *env) return std::strtod(env, nullptr);
  return fallback;
}

}  // namespace attnscope::torch
