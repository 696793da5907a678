#include "kernels/torch/process_keeper.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace attnscope::torch {
namespace {

// The keeper's fixed descriptors: the child's stdin, stdout and stderr, then these two.
constexpr int kLifelineFd = 3;
constexpr int kReportFd = 4;

// What the keeper tells us once the child started (or did not).
struct Report {
  pid_t child = -1;
  int error = 0;  // errno of the failed spawn
};

// Signals the keeper ignores: a terminal's (it shares our process group) and a polite kill. It
// dies by the child's end, the lifeline or SIGKILL only.
constexpr int kIgnored[] = {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP, SIGTERM, SIGPIPE};

// Prepared before the fork: posix_spawn in the keeper needs no allocation.
struct SpawnSetup {
  posix_spawnattr_t attr;
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    // Its own process group (the terminal's signals reach us, not it; we kill the group), our
    // ignored signals back to their defaults, nothing blocked.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&attr, 0);
    sigset_t def, none;
    sigemptyset(&def);
    for (int sig : kIgnored) sigaddset(&def, sig);
    sigaddset(&def, SIGCHLD);
    posix_spawnattr_setsigdefault(&attr, &def);
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
  }
  ~SpawnSetup() { posix_spawnattr_destroy(&attr); }
};

void closeAllFrom(int first) {
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, static_cast<unsigned>(first), ~0u, 0u) == 0) return;
#endif
  rlimit lim{};
  const rlim_t last = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? lim.rlim_cur : 65536;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < last; ++fd) ::close(static_cast<int>(fd));
}

// Ends the keeper as the child ended, so that our waitpid on the keeper tells the child's story.
[[noreturn]] void endLike(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  const int sig = WTERMSIG(status);
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // the child may have dumped one; the keeper's is worthless
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::kill(::getpid(), sig);
  ::_exit(128 + sig);
}

// Runs in the forked keeper: async-signal-safe calls only (the parent may have other threads,
// whose locks this copy inherits held). posix_spawn stands for fork+exec here because it runs no
// fork handlers and, given a path and a prepared attribute, allocates nothing.
[[noreturn]] void keeperMain(char* const* argv, const int fds[5], const SpawnSetup& setup) {
  struct sigaction act {};
  act.sa_handler = SIG_IGN;
  for (int sig : kIgnored) ::sigaction(sig, &act, nullptr);
  act.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &act, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Lift the five descriptors above the targets first: a parent without a stdin may have been
  // handed fd 0 for one of them.
  int high[5];
  for (int i = 0; i < 5; ++i) high[i] = ::fcntl(fds[i], F_DUPFD_CLOEXEC, 16);
  for (int i = 0; i < 5; ++i) ::dup2(high[i], i);
  ::fcntl(kLifelineFd, F_SETFD, FD_CLOEXEC);  // the keeper's alone, not the child's
  ::fcntl(kReportFd, F_SETFD, FD_CLOEXEC);
  closeAllFrom(kReportFd + 1);  // the parent's files (its databases among them) are not ours
  Report report;
  report.error = ::posix_spawn(&report.child, argv[0], nullptr, &setup.attr, argv, environ);
  if (report.error != 0) report.child = -1;
  ssize_t ignored = ::write(kReportFd, &report, sizeof report);
  (void)ignored;
  if (report.child < 0) ::_exit(127);
  // Only the child keeps its stdio: its stdout reaches end-of-file for us when it exits.
  for (int fd : {0, 1, 2, kReportFd}) ::close(fd);
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, report.child, 0));
  for (;;) {
    pollfd wait_for[2] = {{kLifelineFd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    // Without a pidfd (kernels before 5.3) the child's exit is polled every 50 ms.
    const int n = ::poll(wait_for, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 50);
    int status = 0;
    if (n > 0 && wait_for[0].revents != 0) {
      // AttnScope is gone: the child's whole group goes; the child is reaped here, not by init.
      ::kill(-report.child, SIGKILL);
      while (::waitpid(report.child, &status, 0) < 0 && errno == EINTR) {
      }
      ::_exit(137);
    }
    if (::waitpid(report.child, &status, WNOHANG) == report.child) endLike(status);
  }
}

void closePair(int p[2]) {
  for (int i = 0; i < 2; ++i) {
    if (p[i] >= 0) ::close(p[i]);
    p[i] = -1;
  }
}

}  // namespace

KeptChild startKept(const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0].find('/') == std::string::npos)
    throw std::runtime_error("not an executable's path: '" + (argv.empty() ? std::string() : argv[0]) + "'");
  // Everything the keeper needs is allocated before the fork.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const SpawnSetup setup;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, life[2] = {-1, -1}, report[2] = {-1, -1};
  auto closeAll = [&] {
    for (int* p : {in, out, err, life, report}) closePair(p);
  };
  for (int* p : {in, out, err, life, report})
    if (::pipe2(p, O_CLOEXEC) != 0) {
      const int e = errno;
      closeAll();
      throw std::runtime_error(std::string("cannot create pipes: ") + std::strerror(e));
    }
  const int child_fds[5] = {in[0], out[1], err[1], life[0], report[1]};
  // Signals stay blocked from the fork until the keeper has set its own dispositions: a Ctrl-C
  // in between would otherwise run our handler, or the default, in the keeper.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t keeper = ::fork();
  if (keeper == 0) keeperMain(args.data(), child_fds, setup);
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (keeper < 0) {
    closeAll();
    throw std::runtime_error(std::string("cannot fork: ") + std::strerror(fork_errno));
  }
  for (int* fd : {&in[0], &out[1], &err[1], &life[0], &report[1]}) {
    ::close(*fd);
    *fd = -1;
  }
  Report got;
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
