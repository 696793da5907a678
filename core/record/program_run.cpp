#include "core/record/program_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

extern char** environ;

namespace attnscope {
namespace {

constexpr size_t kTailBytes = 8192;
constexpr int kTailLines = 40;
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

std::atomic<pid_t> g_child{0};
std::atomic<bool> g_interrupted{false};

// A signal sent by a process (si_code <= 0: kill, sigqueue, tgkill) reached only us: pass it on.
// One from the kernel (the terminal's Ctrl-C, a hang-up) went to the whole foreground group,
// the program included.
void forward(int sig, siginfo_t* info, void*) {
  g_interrupted.store(true);
  const pid_t child = g_child.load();
  if (child > 0 && info && info->si_code <= 0) ::kill(child, sig);
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // our stderr is gone: the program's still runs to its end
    p += w;
    n -= static_cast<size_t>(w);
  }
}

std::string lastLines(std::string tail) {
  int lines = 0;
  for (size_t i = tail.size(); i-- > 0;)
    if (tail[i] == '\n' && i + 1 < tail.size() && ++lines == kTailLines) return tail.substr(i + 1);
  return tail;
}

class ForwardSignals {
 public:
  explicit ForwardSignals(pid_t child) {
    g_interrupted.store(false);
    g_child.store(child);
    struct sigaction sa {};
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (int sig : kForwarded) sigaction(sig, &sa, &old_[sig]);
  }
  ~ForwardSignals() {
    for (int sig : kForwarded) sigaction(sig, &old_[sig], nullptr);
    g_child.store(0);
  }

 private:
  std::map<int, struct sigaction> old_;
};

}  // namespace

ProgramExit runProgram(const ProgramLaunch& launch) {
  if (launch.argv.empty()) throw std::runtime_error("no program to run");
  // Everything the child needs is built before fork: after it only async-signal-safe calls.
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : launch.env) env[k] = v;
  std::vector<std::string> env_text;
  for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = launch.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int err_pipe[2], exec_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  ProgramExit out;
  out.started_unix_ms = nowMs();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {err_pipe[0], err_pipe[1], exec_pipe[0], exec_pipe[1]}) ::close(fd);
    throw std::runtime_error(std::string("cannot start ") + launch.argv[0] + ": " + std::strerror(e));
  }
  if (pid == 0) {
    // The program starts as `python script.py` would: default signal dispositions, nothing blocked.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig)
      if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
    ::dup2(err_pipe[1], 2);
    ::execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  ForwardSignals forwarding(pid);
  int exec_errno = 0;
  ssize_t got;
  do got = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    ::close(err_pipe[0]);
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    throw std::runtime_error("cannot start " + launch.argv[0] + ": " + std::strerror(exec_errno));
  }

  std::string tail;
  bool open = true;
  int status = 0;
  bool exited = false;
  char buf[4096];
  while (!exited || open) {
    if (open) {
      pollfd p{err_pipe[0], POLLIN, 0};
      const int r = ::poll(&p, 1, exited ? 0 : 100);
      if (r > 0) {
        const ssize_t n = ::read(err_pipe[0], buf, sizeof buf);
        if (n > 0) {
          writeAll(2, buf, static_cast<size_t>(n));
          tail.append(buf, static_cast<size_t>(n));
          if (tail.size() > 2 * kTailBytes) tail.erase(0, tail.size() - kTailBytes);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
          open = false;
        }
      } else if (r == 0 && exited) {
        open = false;  // it ended; what a child of its own still writes is not waited for
      }
    }
    if (!exited) {
      const pid_t w = ::waitpid(pid, &status, open ? WNOHANG : 0);
      if (w == pid) exited = true;
      else if (w < 0 && errno != EINTR) exited = true;
    }
  }
  ::close(err_pipe[0]);
  out.ended_unix_ms = nowMs();
  if (tail.size() > kTailBytes) tail.erase(0, tail.size() - kTailBytes);
  out.stderr_tail = lastLines(std::move(tail));
  if (WIFEXITED(status)) out.status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  out.interrupted = g_interrupted.load() || out.signal == SIGINT || out.signal == SIGTERM;
  return out;
}

}  // namespace attnscope
