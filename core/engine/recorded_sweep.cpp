#include "core/engine/recorded_sweep.h"

#include <chrono>
#include <exception>
#include <stdexcept>

#include "core/base/format.h"
#include "core/result/environment.h"
#include "core/store/store.h"

namespace attnscope {

std::string defaultSweepName(int64_t unix_ms) { return "sweep " + formatLocalTime(unix_ms); }

size_t RecordedSweepResult::count(std::initializer_list<RunStatus> statuses) const {
  size_t n = 0;
  for (const RunResult& r : runs)
    for (RunStatus s : statuses) n += r.status == s;
  return n;
}

RecordedSweep::RecordedSweep(Store& store, SweepSpec spec, SweepShare share)
    : store_(store), spec_(std::move(spec)), share_(std::move(share)) {
  if (auto problem = sweepNameProblem(spec_.name)) throw std::invalid_argument("name: the sweep name " + *problem);
  std::vector<SpecError> errors;
  spec_.expand(&errors);
  if (!errors.empty()) throw std::invalid_argument(describe(errors));  // before anything is stored
  if (spec_.name.empty())
    spec_.name = defaultSweepName(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  result_.name = spec_.name;
  result_.planned = share_.points ? share_.points->size() : spec_.pointCount();
  result_.state = "running";
  result_.sweep_id = store_.createSweep(spec_, store_.saveEnvironment(captureEnvironment()), share_.uuid);
}

RecordedSweep::~RecordedSweep() {
  if (!ended_) fail("the sweep ended without a final state");
}

void RecordedSweep::save(RunResult& run) {
  run.id = store_.saveRun(result_.sweep_id, run);
  RunResult kept = run;
  kept.trace.events = {};  // the trace is in the store; a long sweep's memory stays bounded
  result_.runs.push_back(std::move(kept));
}

const RecordedSweepResult& RecordedSweep::finish(bool cancelled) {
  const char* state = cancelled ? "cancelled" : "finished";
  store_.setSweepState(result_.sweep_id, state);  // a StoreError here leaves ended_ false: fail() runs
  result_.state = state;
  ended_ = true;
  return result_;
}

const RecordedSweepResult& RecordedSweep::fail(const std::string& why) {
  ended_ = true;
  result_.state = "failed";
  result_.error = why;
  try {
    store_.setSweepState(result_.sweep_id, "failed");
  } catch (const std::exception&) {
    // The error already says what went wrong; the next open marks the sweep interrupted.
  }
  return result_;
}

const RecordedSweepResult& RecordedSweep::run(SweepRunner& runner, const RecordedSweepCallbacks& callbacks,
                                              const std::atomic<bool>* cancel) {
  SweepCallbacks cb;
  cb.progress = callbacks.progress;
  cb.result = [&](RunResult& r) {
    save(r);
    if (callbacks.saved) callbacks.saved(r);
  };
  if (callbacks.started) callbacks.started(result_.sweep_id, spec_);
  try {
    runner.selectPoints(share_.points);
    runner.run(spec_, cb, cancel);
  } catch (const std::invalid_argument& e) {
    fail(e.what());
    throw;
  } catch (const StoreError& e) {
    // The files were deleted under this process: what it saved went with them; say nothing more.
    if (e.kind() == StoreError::Kind::replaced) return fail(e.what());
    // Saving a point failed (a full disk, say): the points saved before stay.
    return fail(std::string(e.what()) + "; " + std::to_string(result_.runs.size()) + " of " +
                std::to_string(result_.planned) + " points are saved in sweep S" + std::to_string(result_.sweep_id));
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  // Cancelled: the token was set, whether it stopped a point (saved as cancelled) or came between two.
  const bool cancelled = (cancel && cancel->load()) || result_.count({RunStatus::cancelled}) > 0;
  try {
    return finish(cancelled);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace attnscope
