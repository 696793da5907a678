#pragma once
// A small fixed pool of worker threads for the CPU backends. run() hands out task indices
// [0, tasks) to the workers and the calling thread; the first exception (Cancelled included)
// stops the hand-out, every worker finishes its current task, and the exception is rethrown on
// the calling thread, so a cancel or an error never leaves a thread running behind the caller.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace attnscope {
class RunContext;
}

namespace attnscope::cpu {

class TaskPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency(). The caller counts as one of them.
  explicit TaskPool(int threads = 0);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  int threads() const { return threads_; }

  // Runs body(worker, task) for every task on min(workers, threads()) workers; worker is in
  // [0, that number) and no two concurrent calls share one, so it can index per-worker scratch.
  // Before each task it checks ctx's cancel flag (when ctx is given). Calls from several threads
  // are served one after the other.
  void run(int64_t tasks, int workers, const std::function<void(int worker, int64_t task)>& body,
           const RunContext* ctx);

 private:
  struct Job {
    const std::function<void(int, int64_t)>* body = nullptr;
    const RunContext* ctx = nullptr;
    int64_t tasks = 0;
    int workers = 0;
    std::atomic<int64_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex error_mu;
    std::exception_ptr error;
  };
  void workerLoop(int worker);
  static void work(Job& job, int worker);

  int threads_;
  std::vector<std::thread> pool_;
  std::mutex run_mu_;  // one run() at a time
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int active_ = 0;  // workers of the current generation
  int busy_ = 0;
  bool quit_ = false;
};

}  // namespace attnscope::cpu
