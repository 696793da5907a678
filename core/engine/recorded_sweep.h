#pragma once
// One path from a sweep to the store, for every front end: `attnscope sweep` and `attnscope
// run`, the window's sweep worker, the screenshot tool, the tests (and Slurm shards and
// recordings to come). The life cycle around the engine is decided here once: the environment
// row, the sweep row (state running, owned by this process), one transaction per finished point,
// and the final state (finished, cancelled or failed) with what a failure leaves saved.

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result/run_result.h"
#include "core/engine/sweep_runner.h"
#include "core/spec/sweep_spec.h"

namespace attnscope {

class Store;

// "sweep 2026-12-01 19:48:19" in local time: the name of a sweep given none.
std::string defaultSweepName(int64_t unix_ms);

struct RecordedSweepCallbacks {
  std::function<void(int64_t sweep_id, const SweepSpec& spec)> started;  // the sweep row exists
  std::function<void(const SweepProgress&)> progress;                   // before each point and at the end
  std::function<void(const RunResult&)> saved;  // after a point is stored (id set, trace events included)
};

struct RecordedSweepResult {
  int64_t sweep_id = 0;
  std::string name;
  std::string state;            // finished, cancelled or failed
  std::string error;            // failed: why, and how many points are saved
  size_t planned = 0;           // points of the grid (x backends), or of the shard
  std::vector<RunResult> runs;  // the points saved, in order, without their trace events
  bool cancelled() const { return state == "cancelled"; }
  // Points whose status is one of those given.
  size_t count(std::initializer_list<RunStatus> statuses) const;
};

// What part of a sweep this process runs: all of a new sweep (the default), or one shard of a
// sweep whose other shards run elsewhere (`sweep --shard K/N`): the same UUID in every shard's
// database, and the shard's global point indexes (core/engine/shard.h).
struct SweepShare {
  std::string uuid;                           // empty: a new sweep's own
  std::optional<std::vector<size_t>> points;  // nullopt: every point
};

class RecordedSweep {
 public:
  // Stores this machine's environment and the sweep row (running); a spec without a name gets
  // defaultSweepName(now). Throws StoreError when the store refuses, std::invalid_argument when
  // the name is refused (sweepNameProblem).
  RecordedSweep(Store& store, SweepSpec spec, SweepShare share = {});
  // A sweep never left running: one not finished is stored as failed (best effort).
  ~RecordedSweep();
  RecordedSweep(const RecordedSweep&) = delete;
  RecordedSweep& operator=(const RecordedSweep&) = delete;

  int64_t id() const { return result_.sweep_id; }
  const RecordedSweepResult& result() const { return result_; }
  const SweepSpec& spec() const { return spec_; }

  // Saves one finished point (its own transaction) and sets run.id. StoreError propagates.
  void save(RunResult& run);
  // The final state: cancelled when `cancelled`, else finished. Returns the outcome.
  const RecordedSweepResult& finish(bool cancelled);
  // Ends the sweep as failed with `why` (saving the state may fail too: then the next open sees
  // this process gone and marks the sweep interrupted).
  const RecordedSweepResult& fail(const std::string& why);

  // Runs every point of the spec through `runner`, saving each as it finishes. A point's own
  // failure is its status and the sweep goes on; a cancel stops within the point in flight
  // (saved as cancelled) and ends the sweep cancelled; a failure to save (a full disk) or any
  // other exception ends it failed, keeping every point saved before, with `error` saying how
  // many. Never throws but for an invalid spec (std::invalid_argument, before any point runs).
  const RecordedSweepResult& run(SweepRunner& runner, const RecordedSweepCallbacks& callbacks,
                                 const std::atomic<bool>* cancel = nullptr);

 private:
  Store& store_;
  SweepSpec spec_;
  SweepShare share_;
  RecordedSweepResult result_;
  bool ended_ = false;
};

}  // namespace attnscope
