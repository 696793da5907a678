#pragma once
// A child process spoken to in lines over pipes: the PyTorch worker. POSIX only.
//
// The child runs in its own process group, so a Ctrl-C in the terminal reaches AttnScope alone;
// AttnScope then kills the child itself (cancel) and the point ends as cancelled, not as a
// worker that died of a KeyboardInterrupt. A keeper (process_keeper.h) kills that group when
// AttnScope dies, however it dies, so no worker, nor anything a wrapper script started, outlives
// it. Lines are bounded by us (kMaxLineBytes), not by the worker's good manners.

#include <atomic>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <vector>

namespace attnscope::torch {

// The child exited, timed out, or could not be started. The message is for the user.
struct WorkerFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The longest line we read from a worker. The largest honest one is a profiled call's `finish`
// reply with its trace events (kMaxTraceEvents, a few MB); anything longer is a broken worker,
// which must not make us hold (and parse) whatever it prints.
inline constexpr size_t kMaxLineBytes = size_t{32} << 20;

class WorkerProcess {
 public:
  // Starts argv[0] (the executable's path) with the rest as arguments.
  // Throws WorkerFailure when it cannot be started.
  explicit WorkerProcess(const std::vector<std::string>& argv);
  ~WorkerProcess();  // kills the child if it still runs
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  void writeLine(const std::string& line);
  // The next line of the child's stdout (without the newline). Waits at most timeout_s seconds
  // (<= 0: no limit) and polls `cancel` every 50 ms. Throws Cancelled (after killing the child),
  // or WorkerFailure (after killing it) on timeout, on a line longer than kMaxLineBytes, or when
  // the child closed its stdout.
  std::string readLine(double timeout_s, const std::atomic<bool>* cancel, const std::string& what);

  void kill();  // SIGKILL and reap; idempotent
  // False once the child is gone, also when it died while idle (a spare the OOM killer took).
  bool running() {
    reap(false);
    return keeper_ > 0;
  }
  // The last few KB the child wrote to stderr, for messages (bytes, as the child wrote them).
  std::string stderrTail() const { return err_; }
  // "exited with status 1" / "killed by signal 9" once the child is gone.
  std::string exitDescription() const { return exit_; }

 private:
  void drainStderr();
  void reap(bool block);

  // ": <the child's last stderr line>" as valid, bounded text; "" when it said nothing.
  std::string lastWords() const;

  pid_t keeper_ = -1;  // reaped by us; ends as the child ended
  pid_t group_ = -1;   // the child, leader of its process group
  int in_ = -1, out_ = -1, err_fd_ = -1, lifeline_ = -1;
  std::string buf_;
  size_t scanned_ = 0;  // bytes at the start of buf_ known to hold no newline
  std::string err_;
  std::string exit_;
  std::string name_;  // printable: the path as valid UTF-8
};

// The last non-empty line of a text, for one-line messages built from a traceback.
std::string lastLine(const std::string& text);

}  // namespace attnscope::torch
