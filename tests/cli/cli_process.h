#pragma once
// Runs the attnscope binary with arguments and captures exit code, stdout and stderr.
#include <string>
#include <vector>

struct CliResult {
  int code = -1;
  std::string out;
  std::string err;
};

CliResult runCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
// Starts attnscope in the background; returns its pid (stdout/stderr to /dev/null).
int startCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
std::string tempDir(const std::string& tag);
std::string readFile(const std::string& path);
