#include "core/files/command_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace attnscope {
namespace {

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

}  // namespace

std::string resolveCommand(const std::string& command) {
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

}  // namespace attnscope
