#include "core/engine/sweep_runner.h"

#include <stdexcept>

#include "core/base/clock.h"

namespace attnscope {

std::vector<RunResult> SweepRunner::run(const SweepSpec& spec, const SweepCallbacks& cb,
                                        const std::atomic<bool>* cancel) {
  std::vector<SpecError> errors;
  const std::vector<WorkloadSpec> points = spec.expand(&errors);
  if (!errors.empty()) throw std::invalid_argument(describe(errors));
  std::vector<Backend*> backends;
  for (const auto& id : spec.backends) {
    Backend* b = registry_.find(id);
    if (!b) {
      std::string known;
      for (const auto& k : registry_.ids()) known += (known.empty() ? "" : ", ") + k;
      throw std::invalid_argument("backends: unknown backend '" + id + "' (allowed: " + known + ")");
    }
    backends.push_back(b);
  }
  if (backends.empty()) throw std::invalid_argument("backends: at least one backend is needed");

  RunOptions opt;
  opt.warmup = spec.warmup;
  opt.reps = spec.reps;
  opt.memory_budget = spec.memory_budget;
  opt.check = spec.check;
  opt.cancel = cancel;
  opt.capture = capture_;

  std::vector<RunResult> results;
  SweepProgress progress;
  progress.total = points.size() * backends.size();
  const int64_t start = nowNs();
  auto report = [&] {
    progress.elapsed_s = static_cast<double>(nowNs() - start) * 1e-9;
    progress.eta_s = progress.done > 0 ? progress.elapsed_s / static_cast<double>(progress.done) *
                                             static_cast<double>(progress.total - progress.done)
                                       : -1;
    if (cb.progress) cb.progress(progress);
  };
  for (const auto& point : points) {
    for (Backend* b : backends) {
      if (cancel && cancel->load()) {
        progress.current.clear();
        report();
        return results;
      }
      progress.current = b->id() + " " + summary(point);
      report();
      RunResult r = runPoint(*b, point, opt);
      if (cb.result) cb.result(r);
      // The callback had the trace (and stored it); the list kept for the summary does not hold
      // every point's events, so a long sweep's memory stays bounded.
      r.trace.events = {};
      results.push_back(std::move(r));
      ++progress.done;
      if (results.back().status == RunStatus::cancelled) {
        progress.current.clear();
        report();
        return results;
      }
    }
  }
  progress.current.clear();
  report();
  return results;
}

}  // namespace attnscope
