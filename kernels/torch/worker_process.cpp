#include "kernels/torch/worker_process.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/backend/backend.h"
#include "core/base/clock.h"
#include "core/base/format.h"
#include "core/base/utf8_text.h"
#include "kernels/torch/process_keeper.h"
#include "kernels/torch/worker_reply.h"

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

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv) : name_(validUtf8(argv.at(0))) {
  KeptChild child;
  try {
    child = startKept(argv);
  } catch (const std::exception& e) {
    throw WorkerFailure(name_ + ": cannot start: " + e.what());
  }
  keeper_ = child.keeper;
  group_ = child.child;
  in_ = child.in;
  out_ = child.out;
  err_fd_ = child.err;
  lifeline_ = child.lifeline;
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
                        lastWords());
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

std::string WorkerProcess::lastWords() const {
  const std::string last = lastLine(err_);
  return last.empty() ? "" : ": " + workerText(last);
}

std::string WorkerProcess::readLine(double timeout_s, const std::atomic<bool>* cancel, const std::string& what) {
  const int64_t deadline = timeout_s > 0 ? nowNs() + static_cast<int64_t>(timeout_s * 1e9) : -1;
  for (;;) {
    // Only the bytes not yet searched: a long line arrives in many chunks.
    if (size_t nl = buf_.find('\n', scanned_); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      scanned_ = 0;
      return line;
    }
    scanned_ = buf_.size();
    if (buf_.size() > kMaxLineBytes) {
      kill();
      buf_.clear();
      scanned_ = 0;
      throw WorkerFailure(name_ + " sent a line longer than " + formatBytes(static_cast<int64_t>(kMaxLineBytes)) +
                          " while " + what + " (the protocol's limit; a broken worker?); killed it");
    }
    if (out_ < 0) {
      // Closed stdout: the worker is exiting. Give it a moment to say why, then make sure.
      for (int i = 0; i < 20 && keeper_ > 0; ++i) {
        drainStderr();
        reap(false);
        if (keeper_ > 0) ::usleep(50000);
      }
      drainStderr();
      kill();
      throw WorkerFailure(name_ + " exited (" + exit_ + ") while " + what + lastWords());
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
    // At most one line's limit past what we hold: the check above then stops a flood.
    for (size_t taken = 0; taken <= kMaxLineBytes;) {
      ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n > 0) {
        buf_.append(chunk, static_cast<size_t>(n));
        taken += static_cast<size_t>(n);
        if (std::memchr(chunk, '\n', static_cast<size_t>(n))) break;
        continue;
      }
      if (n == 0) closeFd(out_);
      break;
    }
  }
}

void WorkerProcess::reap(bool block) {
  if (keeper_ <= 0) return;
  int status = 0;
  pid_t r;
  do r = ::waitpid(keeper_, &status, block ? 0 : WNOHANG);
  while (r < 0 && errno == EINTR);
  if (r != keeper_) return;
  keeper_ = -1;
  if (WIFEXITED(status)) exit_ = "exited with status " + std::to_string(WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) exit_ = "killed by signal " + std::to_string(WTERMSIG(status));
  closeFd(in_);
}

void WorkerProcess::kill() {
  if (keeper_ > 0) {
    // The child's whole group: whatever it started (a shell's children, compile workers) goes
    // with it. The keeper reaps the child and then ends, so once it is reaped the child is gone.
    ::kill(-group_, SIGKILL);
    reap(true);
  }
  closeFd(in_), closeFd(out_), closeFd(err_fd_), closeFd(lifeline_);
}

}  // namespace attnscope::torch
