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
// The same under a resource limit (what `ulimit -v`, `-f` or `-n` set: RLIMIT_AS, RLIMIT_FSIZE,
// RLIMIT_NOFILE), every signal at its default disposition as a shell would leave it.
CliResult runCliUnderLimit(const std::vector<std::string>& args, int resource, unsigned long long limit);
// Starts attnscope in the background; returns its pid (stdout/stderr to /dev/null).
int startCli(const std::vector<std::string>& args, const std::vector<std::string>& env = {});
std::string tempDir(const std::string& tag);
std::string readFile(const std::string& path);
