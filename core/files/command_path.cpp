#include "core/files/command_path.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
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

CommandOutput runCommand(const std::vector<std::string>& argv) {
  CommandOutput r;
  if (argv.empty()) return r;
  const std::string program = resolveCommand(argv[0]);
  if (program.empty()) {
    r.err = argv[0] + ": not found on PATH";
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string exec_failed = argv[0] + ": cannot be run\n";
  int outp[2], errp[2];
  if (::pipe2(outp, O_CLOEXEC) != 0 || ::pipe2(errp, O_CLOEXEC) != 0) {
    r.err = std::strerror(errno);
    return r;
  }
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.err = std::strerror(errno);
    for (int fd : {outp[0], outp[1], errp[0], errp[1], null_in})
      if (fd >= 0) ::close(fd);
    return r;
  }
  if (pid == 0) {  // async-signal-safe calls only from here on
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(outp[1], 1);
    ::dup2(errp[1], 2);
    ::execv(program.c_str(), args.data());
    [[maybe_unused]] ssize_t w = ::write(2, exec_failed.data(), exec_failed.size());
    ::_exit(127);
  }
  ::close(outp[1]);
  ::close(errp[1]);
  if (null_in >= 0) ::close(null_in);
  pollfd fds[2] = {{outp[0], POLLIN, 0}, {errp[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace attnscope
