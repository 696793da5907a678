#include "ui/sweep_snapshot.h"

#include <unordered_set>

namespace attnscope::ui {

SweepSnapshotPtr loadSweepSnapshot(Store& store, int64_t sweep_id) {
  auto info = store.sweep(sweep_id);
  if (!info) return nullptr;
  auto snap = std::make_shared<SweepSnapshot>();
  snap->info = *info;
  try {
    snap->spec = sweepSpecFromJson(info->spec);
  } catch (const std::exception&) {
    // An unreadable grid still shows its runs; the charts only need the runs' own specs.
  }
  if (info->environment_id > 0) {
    try {
      snap->environment = store.environment(info->environment_id);
    } catch (const StoreError&) {
    }
  }
  snap->runs = store.runs(sweep_id);
  return snap;
}

SweepSnapshotPtr withRuns(const SweepSnapshotPtr& base, std::vector<RunResult> runs) {
  SweepSnapshotPtr out = base;
  std::shared_ptr<SweepSnapshot> fresh;
  // Ids already held (the snapshot may have been read from the store after the worker saved
  // them): one pass over base, not one per new run.
  std::unordered_set<int64_t> held_ids;
  if (base)
    for (const RunResult& r : base->runs) held_ids.insert(r.id);
  for (RunResult& run : runs) {
    if (run.id > 0 && !held_ids.insert(run.id).second) continue;
    if (!fresh) {  // one copy for the whole batch
      fresh = std::make_shared<SweepSnapshot>(base ? *base : SweepSnapshot{});
      out = fresh;
    }
    run.trace.events.clear();
    countOk(fresh->info, run);
    fresh->runs.push_back(std::move(run));
    fresh->info.run_count = static_cast<int64_t>(fresh->runs.size());
  }
  return out;
}

SweepSnapshotPtr withRun(const SweepSnapshotPtr& base, RunResult run) {
  // The snapshot may have been read from the store after the worker saved this run.
  if (base && run.id > 0)
    for (const RunResult& r : base->runs)
      if (r.id == run.id) return base;
  auto snap = std::make_shared<SweepSnapshot>(base ? *base : SweepSnapshot{});
  run.trace.events.clear();
  snap->runs.push_back(std::move(run));
  snap->info.run_count = static_cast<int64_t>(snap->runs.size());
  countOk(snap->info, snap->runs.back());
  return snap;
}

}  // namespace attnscope::ui
