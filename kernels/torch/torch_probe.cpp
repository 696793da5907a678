#include "kernels/torch/torch_probe.h"

#include <thread>
#include <utility>

#include "core/backend/backend.h"

namespace attnscope::torch {

TorchProbe& TorchProbe::instance() {
  static TorchProbe* probe = new TorchProbe;  // never destroyed: background threads may outlive main
  return *probe;
}

std::string TorchProbe::keyOf(const PythonChoice& p, const std::string& script) {
  return p.path + "\n" + p.problem + "\n" + script;
}

std::shared_ptr<const ProbeResult> TorchProbe::probe(const PythonChoice& python, const std::string& script,
                                                     std::unique_ptr<TorchWorker>* spare,
                                                     const std::atomic<bool>* cancel) {
  auto r = std::make_shared<ProbeResult>();
  r->python = python;
  r->script = script;
  if (!python.problem.empty()) {
    r->problem = python.problem;
    return r;
  }
  if (script.empty()) {
    std::string searched;
    workerScript(&searched);
    r->problem = "attnscope_torch_worker.py not found (looked in " + validUtf8(searched) +
                 "; reinstall AttnScope or set ATTNSCOPE_TORCH_WORKER)";
    return r;
  }
  try {
    auto worker = std::make_unique<TorchWorker>(python, script, cancel);
    r->hello = worker->hello();
    if (!r->hello.usable) r->problem = r->hello.problem;
    else if (spare) *spare = std::move(worker);
  } catch (const Cancelled&) {
    r->cancelled = true;
    r->problem = "cancelled while " + python.shown() + " was importing torch";
  } catch (const std::exception& e) {
    r->problem = e.what();
  }
  return r;
}

namespace {
thread_local int t_blocking = 0;
}  // namespace

TorchProbe::BlockingScope::BlockingScope() { ++t_blocking; }
TorchProbe::BlockingScope::~BlockingScope() { --t_blocking; }

std::shared_ptr<const ProbeResult> TorchProbe::result() {
  const PythonChoice python = choosePython();
  const std::string script = workerScript().value_or("");
  const std::string key = keyOf(python, script);
  std::unique_lock lock(mu_);
  if (key != key_) {
    key_ = key;
    cached_.reset();
    spare_.reset();
    ++generation_;
    running_ = false;
    done_.notify_all();  // waiters for the old Python's probe give up
  }
  if (cached_) return cached_;
  const bool wait = !background_ || t_blocking > 0;
  if (running_) {
    if (!wait) return nullptr;
    const uint64_t gen = generation_;
    done_.wait(lock, [&] { return !running_ || gen != generation_; });
    return cached_;  // nullptr only if the Python changed meanwhile
  }
  // Start a probe. It never runs under the lock: a GUI thread asking meanwhile must not wait.
  running_ = true;
  const uint64_t gen = generation_;
  const bool keep_spare = !background_;
  const std::atomic<bool>* cancel = wait ? cancel_ : nullptr;
  auto work = [this, python, script, gen, keep_spare, cancel] {
    std::unique_ptr<TorchWorker> spare;
    auto r = probe(python, script, keep_spare ? &spare : nullptr, cancel);
    std::function<void()> notify;
    {
      std::lock_guard l(mu_);
      if (r->cancelled) {
        running_ = false;  // not cached: the next question probes again
        last_cancelled_ = r;
      } else if (gen == generation_) {  // else the Python changed meanwhile: a newer probe answers
        cached_ = r;
        spare_ = std::move(spare);
        running_ = false;
        notify = listener_;
      }
    }
    done_.notify_all();
    if (notify) notify();
  };
  if (wait) {
    lock.unlock();
    work();
    lock.lock();
    return cached_ ? cached_ : std::exchange(last_cancelled_, nullptr);
  }
  std::thread(work).detach();
  return nullptr;
}

void TorchProbe::setBackground(bool background) {
  std::lock_guard lock(mu_);
  background_ = background;
  if (background) spare_.reset();  // an idle torch process would sit in the GUI's memory
}

void TorchProbe::setCancel(const std::atomic<bool>* cancel) {
  std::lock_guard lock(mu_);
  cancel_ = cancel;
}

void TorchProbe::setListener(std::function<void()> listener) {
  std::lock_guard lock(mu_);
  listener_ = std::move(listener);
}

void TorchProbe::invalidate() {
  {
    std::lock_guard lock(mu_);
    key_.clear();
    cached_.reset();
    spare_.reset();
    ++generation_;
    running_ = false;
  }
  done_.notify_all();
}

std::unique_ptr<TorchWorker> TorchProbe::takeSpare(const std::string& python_path) {
  std::lock_guard lock(mu_);
  if (spare_ && spare_->alive() && spare_->python().path == python_path) return std::move(spare_);
  spare_.reset();
  return nullptr;
}

}  // namespace attnscope::torch
