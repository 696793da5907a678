#include "kernels/torch/process_keeper.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

#include "core/base/utf8_text.h"
#include "kernels/torch/torch_python.h"

extern char** environ;

namespace attnscope::torch {
namespace {

void closePair(int p[2]) {
  for (int i = 0; i < 2; ++i) {
    if (p[i] >= 0) ::close(p[i]);
    p[i] = -1;
  }
}

// Our pipe ends above the keeper's fixed descriptors (0 to 4), so that placing one there never
// overwrites another: a process without a stdin may have been handed fd 0 by pipe2.
bool liftAbove(int& fd, int lowest) {
  if (fd >= lowest) return true;
  const int lifted = ::fcntl(fd, F_DUPFD_CLOEXEC, lowest);
  ::close(fd);
  fd = lifted;
  return fd >= 0;
}

}  // namespace

KeptChild startKept(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].find('/') == std::string::npos)
    throw std::runtime_error("not an executable's path: '" + validUtf8(argv.empty() ? std::string() : argv[0]) + "'");
  std::string searched;
  const auto keeper_path = keeperProgram(&searched);
  if (!keeper_path)
    throw std::runtime_error("attnscope-torch-keeper not found (looked in " + validUtf8(searched) +
                             "; reinstall AttnScope)");
  std::vector<char*> args{const_cast<char*>(keeper_path->c_str())};
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, life[2] = {-1, -1}, report[2] = {-1, -1};
  auto closeAll = [&] {
    for (int* p : {in, out, err, life, report}) closePair(p);
  };
  for (int* p : {in, out, err, life, report})
    if (::pipe2(p, O_CLOEXEC) != 0 || !liftAbove(p[0], kKeeperReportFd + 1) || !liftAbove(p[1], kKeeperReportFd + 1)) {
      const int e = errno;
      closeAll();
      throw std::runtime_error(std::string("cannot create pipes: ") + std::strerror(e));
    }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawn_file_actions_adddup2(&fa, life[0], kKeeperLifelineFd);
  posix_spawn_file_actions_adddup2(&fa, report[1], kKeeperReportFd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  sigset_t blocked;
  sigemptyset(&blocked);
  for (int sig : kKeeperIgnored) sigaddset(&blocked, sig);
  posix_spawnattr_setsigmask(&attr, &blocked);
  pid_t keeper = -1;
  const int rc = ::posix_spawn(&keeper, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  for (int* fd : {&in[0], &out[1], &err[1], &life[0], &report[1]}) {
    ::close(*fd);
    *fd = -1;
  }
  if (rc != 0) {
    closeAll();
    throw std::runtime_error(validUtf8(*keeper_path) + ": " + std::strerror(rc));
  }
  KeeperReport got;
  ssize_t n;
  do n = ::read(report[0], &got, sizeof got);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof got) || got.child < 0) {
    int status = 0;
    ::kill(keeper, SIGKILL);
    while (::waitpid(keeper, &status, 0) < 0 && errno == EINTR) {
    }
    closeAll();
    throw std::runtime_error(std::strerror(n == static_cast<ssize_t>(sizeof got) ? got.error : EIO));
  }
  closePair(report);
  return {keeper, got.child, in[1], out[0], err[0], life[1]};
}

}  // namespace attnscope::torch
