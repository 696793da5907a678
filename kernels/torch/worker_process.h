#pragma once
// A child process spoken to in lines over pipes: the PyTorch worker. POSIX only.
//
// The child runs in its own process group, so a Ctrl-C in the terminal reaches AttnScope alone;
// AttnScope then kills the child itself (cancel) and the point ends as cancelled, not as a
// worker that died of a KeyboardInterrupt.

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

class WorkerProcess {
 public:
  // Starts argv[0] (a path, or a name looked up on PATH) with the rest as arguments.
  // Throws WorkerFailure when it cannot be started.
  explicit WorkerProcess(const std::vector<std::string>& argv);
  ~WorkerProcess();  // kills the child if it still runs
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  void writeLine(const std::string& line);
  // The next line of the child's stdout (without the newline). Waits at most timeout_s seconds
  // (<= 0: no limit) and polls `cancel` every 50 ms. Throws Cancelled (after killing the child),
  // or WorkerFailure on timeout (after killing it) or when the child closed its stdout.
  std::string readLine(double timeout_s, const std::atomic<bool>* cancel, const std::string& what);

  void kill();  // SIGKILL and reap; idempotent
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // The last few KB the child wrote to stderr, for messages.
  std::string stderrTail() const { return err_; }
  // "exited with status 1" / "killed by signal 9" once the child is gone.
  std::string exitDescription() const { return exit_; }

 private:
  void drainStderr();
  void reap(bool block);

  pid_t pid_ = -1;
  int in_ = -1, out_ = -1, err_fd_ = -1;
  std::string buf_;
  std::string err_;
  std::string exit_;
  std::string name_;
};

// The last non-empty line of a text, for one-line messages built from a traceback.
std::string lastLine(const std::string& text);

}  // namespace attnscope::torch
