#include "kernels/cpu/task_pool.h"

#include <algorithm>

#include "core/backend/backend.h"

namespace attnscope::cpu {

TaskPool::TaskPool(int threads)
    : threads_(threads > 0 ? threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()))) {
  for (int w = 1; w < threads_; ++w) pool_.emplace_back([this, w] { workerLoop(w); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (auto& t : pool_) t.join();
}

void TaskPool::work(Job& job, int worker) {
  try {
    while (!job.stop.load(std::memory_order_relaxed)) {
      if (job.ctx) job.ctx->throwIfCancelled();
      const int64_t task = job.next.fetch_add(1, std::memory_order_relaxed);
      if (task >= job.tasks) break;
      (*job.body)(worker, task);
    }
  } catch (...) {
    std::lock_guard lock(job.error_mu);
    if (!job.error) job.error = std::current_exception();
    job.stop.store(true, std::memory_order_relaxed);
  }
}

void TaskPool::workerLoop(int worker) {
  uint64_t seen = 0;
  for (;;) {
    Job* job = nullptr;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
      if (quit_) return;
      seen = generation_;
      if (worker >= active_) continue;  // not needed this time; job_ may already be gone
      job = job_;
    }
    work(*job, worker);
    {
      std::lock_guard lock(mu_);
      if (--busy_ == 0) done_.notify_all();
    }
  }
}

void TaskPool::run(int64_t tasks, int workers, const std::function<void(int, int64_t)>& body,
                   const RunContext* ctx) {
  if (tasks <= 0) return;
  std::lock_guard serial(run_mu_);
  Job job;
  job.body = &body;
  job.ctx = ctx;
  job.tasks = tasks;
  job.workers = static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(workers, tasks), 1, threads_));
  if (job.workers > 1) {
    std::lock_guard lock(mu_);
    job_ = &job;
    active_ = job.workers;
    busy_ = job.workers - 1;
    ++generation_;
  }
  if (job.workers > 1) wake_.notify_all();
  work(job, 0);
  if (job.workers > 1) {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
  }
  if (job.error) std::rethrow_exception(job.error);
}

}  // namespace attnscope::cpu
