#include "tests/support/cli_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace {

// The inherited environment with `extra` ("NAME=value") replacing variables of the same name:
// getenv returns the first match, so appending alone would not override (QT_QPA_PLATFORM= under
// a test runner that exports QT_QPA_PLATFORM=offscreen would still open an offscreen window).
std::vector<char*> buildEnv(const std::vector<std::string>& extra, std::vector<std::string>& storage) {
  auto nameOf = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || nameOf(x) == nameOf(entry);
    if (!replaced) storage.push_back(entry);
  }
  for (const auto& x : extra) storage.push_back(x);
  std::vector<char*> out;
  for (auto& s : storage) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

pid_t spawn(const std::vector<std::string>& args, const std::vector<std::string>& env, int outFd, int errFd) {
  std::vector<std::string> argStorage{ATTNSCOPE_BIN};
  argStorage.insert(argStorage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argStorage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStorage;
  std::vector<char*> envp = buildEnv(env, envStorage);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, outFd, 1);
  posix_spawn_file_actions_adddup2(&fa, errFd, 2);
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0)
    throw std::runtime_error("cannot start " + std::string(ATTNSCOPE_BIN));
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

}  // namespace

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tempDir(const std::string& tag) {
  std::string templ = (std::filesystem::temp_directory_path() / ("attnscope-" + tag + "-XXXXXX")).string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp failed");
  return templ;
}

CliResult runCli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  std::string dir = tempDir("cli");
  std::string outPath = dir + "/out", errPath = dir + "/err";
  int outFd = open(outPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int errFd = open(errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = spawn(args, env, outFd, errFd);
  close(outFd);
  close(errFd);
  int status = 0;
  waitpid(pid, &status, 0);
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = readFile(outPath);
  r.err = readFile(errPath);
  std::filesystem::remove_all(dir);
  return r;
}

CliResult runCliUnderLimit(const std::vector<std::string>& args, int resource, unsigned long long limit) {
  const std::string dir = tempDir("cli");
  const std::string out = dir + "/out", err = dir + "/err";
  const pid_t pid = fork();
  if (pid == 0) {
    for (int sig : {SIGXFSZ, SIGINT, SIGTERM, SIGPIPE}) signal(sig, SIG_DFL);
    const rlimit rl{static_cast<rlim_t>(limit), static_cast<rlim_t>(limit)};
    if (setrlimit(resource, &rl) != 0) _exit(97);
    if (!freopen("/dev/null", "r", stdin) || !freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr))
      _exit(99);
    std::vector<std::string> storage{ATTNSCOPE_BIN};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(98);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  CliResult r{WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), readFile(out), readFile(err)};
  std::filesystem::remove_all(dir);
  return r;
}

int startCli(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int devnull = open("/dev/null", O_WRONLY);
  pid_t pid = spawn(args, env, devnull, devnull);
  close(devnull);
  return pid;
}
