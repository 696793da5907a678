// attnscope-torch-keeper CHILD ARGS...: starts CHILD in a process group of its own and waits.
// When CHILD ends, ends the same way (its exit status, or killed by its signal); when the
// lifeline (fd 3) closes, AttnScope is gone: SIGKILLs CHILD's whole group, reaps CHILD and exits.
// Started by kernels/torch/process_keeper.cpp, which documents why it exists; not for people.
#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/torch/process_keeper.h"

extern char** environ;

namespace {

using attnscope::torch::KeeperReport;
using attnscope::torch::kKeeperIgnored;
using attnscope::torch::kKeeperLifelineFd;
using attnscope::torch::kKeeperReportFd;

// Ends as the child ended, so that AttnScope's waitpid on the keeper tells the child's story.
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  struct sigaction act {};
  act.sa_handler = SIG_IGN;
  for (int sig : kKeeperIgnored) ::sigaction(sig, &act, nullptr);
  act.sa_handler = SIG_DFL;
  ::sigaction(SIGCHLD, &act, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);  // started with the ignored ones blocked
  ::fcntl(kKeeperLifelineFd, F_SETFD, FD_CLOEXEC);  // the keeper's alone, not the child's
  ::fcntl(kKeeperReportFd, F_SETFD, FD_CLOEXEC);

  // The child: its own process group (the terminal's signals reach AttnScope, not it; the group is
  // what gets killed), the signals we ignore back to their defaults, nothing blocked.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t def;
  sigemptyset(&def);
  for (int sig : kKeeperIgnored) sigaddset(&def, sig);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setsigmask(&attr, &none);
  KeeperReport report;
  report.error = ::posix_spawn(&report.child, argv[1], nullptr, &attr, argv + 1, environ);
  posix_spawnattr_destroy(&attr);
  if (report.error != 0) report.child = -1;
  ssize_t written = ::write(kKeeperReportFd, &report, sizeof report);
  (void)written;
  if (report.child < 0) return 127;
  // Only the child keeps its stdio: its stdout reaches end-of-file for AttnScope when it exits.
  for (int fd : {0, 1, 2, kKeeperReportFd}) ::close(fd);

  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, report.child, 0));
  for (;;) {
    pollfd wait_for[2] = {{kKeeperLifelineFd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    // Without a pidfd (kernels before 5.3) the child's exit is polled every 50 ms.
    const int n = ::poll(wait_for, pidfd >= 0 ? 2 : 1, pidfd >= 0 ? -1 : 50);
    int status = 0;
    if (n > 0 && wait_for[0].revents != 0) {
      // AttnScope is gone: the child's whole group goes; the child is reaped here, not by init.
      ::kill(-report.child, SIGKILL);
      while (::waitpid(report.child, &status, 0) < 0 && errno == EINTR) {
      }
      return 137;
    }
    if (::waitpid(report.child, &status, WNOHANG) == report.child) endLike(status);
  }
}
