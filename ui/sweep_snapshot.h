#pragma once
// An immutable view of one sweep (spec, environment, finished runs) handed to the charts.
// Workers and the store produce new snapshots; nothing holds a pointer into live state.

#include <memory>
#include <vector>

#include "core/result/environment.h"
#include "core/result/run_result.h"
#include "core/store/store.h"
#include "core/spec/sweep_spec.h"

namespace attnscope::ui {

struct SweepSnapshot {
  SweepInfo info;
  SweepSpec spec;
  Environment environment;
  std::vector<RunResult> runs;  // without trace events
};
using SweepSnapshotPtr = std::shared_ptr<const SweepSnapshot>;
using SweepSnapshots = std::vector<SweepSnapshotPtr>;

// Reads a sweep and its runs. Returns nullptr when the sweep does not exist; throws StoreError.
SweepSnapshotPtr loadSweepSnapshot(Store& store, int64_t sweep_id);

// A copy of base with one more run; base itself when it holds that run already.
SweepSnapshotPtr withRun(const SweepSnapshotPtr& base, RunResult run);
// The same for a batch: one copy of base for all of them (the window batches the points that
// finish within a moment, so a sweep of n points is not copied n times).
SweepSnapshotPtr withRuns(const SweepSnapshotPtr& base, std::vector<RunResult> runs);

}  // namespace attnscope::ui
