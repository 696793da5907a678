#include "core/engine/sweep_runner.h"

#include <algorithm>
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

  const size_t total = points.size() * backends.size();
  std::vector<bool> wanted(total, !selected_);
  if (selected_)
    for (size_t p : *selected_) {
      if (p >= total)
        throw std::invalid_argument("points: point " + std::to_string(p) + " is not in this sweep (it has " +
                                    std::to_string(total) + " points, 0 to " + std::to_string(total ? total - 1 : 0) + ")");
      wanted[p] = true;
    }

  std::vector<RunResult> results;
  SweepProgress progress;
  progress.total = selected_ ? static_cast<size_t>(std::count(wanted.begin(), wanted.end(), true)) : total;
  // The ETA weighs each point by its work (pointFlops, plus a constant per point for what does not
  // grow with size), not by its count: seq 4096 after seq 128 is 1000x the time, not the same.
  std::vector<double> work(points.size());
  double work_total = 0, work_done = 0;
  for (size_t g = 0; g < points.size(); ++g) {
    work[g] = pointFlops(points[g]) + 1e6;
    for (size_t bi = 0; bi < backends.size(); ++bi)
      if (wanted[g * backends.size() + bi]) work_total += work[g];
  }
  const int64_t start = nowNs();
  auto report = [&] {
    progress.elapsed_s = static_cast<double>(nowNs() - start) * 1e-9;
    progress.eta_s = progress.done > 0 && work_done > 0
                         ? progress.elapsed_s / work_done * std::max(0.0, work_total - work_done)
                         : -1;
    if (cb.progress) cb.progress(progress);
  };
  for (size_t g = 0; g < points.size(); ++g) {
    const WorkloadSpec& point = points[g];
    for (size_t bi = 0; bi < backends.size(); ++bi) {
      Backend* b = backends[bi];
      const size_t index = g * backends.size() + bi;
      if (!wanted[index]) continue;
      if (cancel && cancel->load()) {
        progress.current.clear();
        report();
        return results;
      }
      progress.current = b->id() + " " + summary(point);
      report();
      RunResult r = runPoint(*b, point, opt);
      r.point_index = static_cast<int64_t>(index);
      if (cb.result) cb.result(r);
      // The callback had the trace (and stored it); the list kept for the summary does not hold
      // every point's events, so a long sweep's memory stays bounded.
      r.trace.events = {};
      results.push_back(std::move(r));
      ++progress.done;
      work_done += work[g];
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
