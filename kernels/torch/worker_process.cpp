#include "kernels/torch/worker_process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend.h"
#include "core/clock.h"

extern char** environ;

namespace attnscope::torch {
namespace {

constexpr size_t kStderrKeep = 4096;

void closeFd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

std::string lastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv) : name_(argv.at(0)) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw WorkerFailure(std::string("cannot create pipes for ") + name_ + ": " + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group: the terminal's SIGINT goes to AttnScope, which kills the worker itself.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    closeFd(in_), closeFd(out_), closeFd(err_fd_);
    throw WorkerFailure(name_ + ": cannot start: " + std::strerror(rc));
  }
  pid_ = pid;
  ::fcntl(out_, F_SETFL, ::fcntl(out_, F_GETFL) | O_NONBLOCK);
  ::fcntl(err_fd_, F_SETFL, ::fcntl(err_fd_, F_GETFL) | O_NONBLOCK);
}

WorkerProcess::~WorkerProcess() { kill(); }

void WorkerProcess::writeLine(const std::string& line) {
  // A worker that died leaves us writing into a closed pipe: that must be an error of this call,
  // not a SIGPIPE for the whole process. Block it on this thread and swallow a pending one.
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  std::string data = line + "\n";
  size_t done = 0;
  bool failed = false;
  while (done < data.size()) {
    ssize_t n = in_ >= 0 ? ::write(in_, data.data() + done, data.size() - done) : -1;
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      failed = true;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (failed) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  if (failed) {
      drainStderr();
      reap(false);
      throw WorkerFailure(name_ + " stopped reading its requests" + (exit_.empty() ? "" : " (" + exit_ + ")") +
                          (lastLine(err_).empty() ? "" : ": " + lastLine(err_)));
  }
}

void WorkerProcess::drainStderr() {
  char chunk[4096];
  while (err_fd_ >= 0) {
    ssize_t n = ::read(err_fd_, chunk, sizeof chunk);
    if (n > 0) {
      err_.append(chunk, static_cast<size_t>(n));
      if (err_.size() > 2 * kStderrKeep) err_.erase(0, err_.size() - kStderrKeep);
      continue;
    }
    if (n == 0) closeFd(err_fd_);
    break;
  }
}

std::string WorkerProcess::readLine(double timeout_s, const std::atomic<bool>* cancel, const std::string& what) {
  const int64_t deadline = timeout_s > 0 ? nowNs() + static_cast<int64_t>(timeout_s * 1e9) : -1;
  for (;;) {
    if (size_t nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    if (out_ < 0) {
      // Closed stdout: the worker is exiting. Give it a moment to say why, then make sure.
      for (int i = 0; i < 20 && pid_ > 0; ++i) {
        drainStderr();
        reap(false);
        if (pid_ > 0) ::usleep(50000);
      }
      drainStderr();
      kill();
      throw WorkerFailure(name_ + " exited (" + exit_ + ") while " + what +
                          (lastLine(err_).empty() ? "" : ": " + lastLine(err_)));
    }
    if (cancel && cancel->load()) {
      kill();
      throw Cancelled();
    }
    if (deadline >= 0 && nowNs() > deadline) {
      kill();
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", timeout_s);
      throw WorkerFailure(name_ + " did not answer within " + secs + " s while " + what +
                          "; killed it (ATTNSCOPE_TORCH_TIMEOUT sets the limit)");
    }
    pollfd fds[2] = {{out_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
    ::poll(fds, err_fd_ >= 0 ? 2 : 1, 50);
    drainStderr();
    char chunk[65536];
    for (;;) {
      ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) closeFd(out_);
      break;
    }
  }
}

void WorkerProcess::reap(bool block) {
  if (pid_ <= 0) return;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r != pid_) return;
  pid_ = -1;
  if (WIFEXITED(status)) exit_ = "exited with status " + std::to_string(WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) exit_ = "killed by signal " + std::to_string(WTERMSIG(status));
  closeFd(in_);
}

void WorkerProcess::kill() {
  if (pid_ > 0) {
    // The whole process group: whatever the worker started (a shell's children, compile
    // workers) goes with it.
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    reap(true);
  }
  closeFd(in_), closeFd(out_), closeFd(err_fd_);
}

}  // namespace attnscope::torch
