#pragma once
// Following a sweep submitted to Slurm (`sweep --slurm`): the tasks' states from squeue and sacct,
// and each ended task's shard merged into the store. One pass is pollSlurmSweep; `sweep --wait`
// and `slurm status` (app/commands_cluster.cpp) call it in a loop or once, the GUI's Runs dock on
// a pool thread every few seconds while a submitted sweep is listed.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/store/store.h"

namespace attnscope {

// sbatch and squeue on PATH: where jobs are submitted (a login node, or scripts/slurm-local.sh).
bool slurmOnPath();
// Throws std::runtime_error naming the missing commands and where they run, when !slurmOnPath().
void requireSlurm();

// MaxArraySize and MaxJobCount from `scontrol show config` (0 when not found or no scontrol).
std::pair<int64_t, int64_t> slurmLimits();

// The most tasks one array may have under those limits: indexes 0..N-1 < MaxArraySize, and N job
// records leaving half of MaxJobCount to the cluster's other jobs. `fallback` when neither is known.
int64_t slurmTaskCap(int64_t max_array_size, int64_t max_job_count, int64_t fallback);

// A task no longer queued or running (COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY, ...).
bool slurmStateEnded(const std::string& state);

// One task's state as squeue or sacct print it.
struct SlurmTaskState {
  std::string state, elapsed;
};
// The states of array job `job`'s tasks, by task index: sacct for those it knows, squeue's live
// view over it for the queued and running ones. have_sacct: the cluster keeps accounting;
// squeue_ok: squeue answered (or no longer knows the job: every task has ended).
std::map<int, SlurmTaskState> slurmArrayStates(const std::string& job, bool* have_sacct, bool* squeue_ok);

// What one pass over a submitted sweep found and did.
struct SlurmPoll {
  std::vector<SlurmTask> tasks;           // as saved back (state, elapsed, merged)
  std::vector<std::string> refused;       // "job_task: reason" for each shard the merge refused
  std::map<std::string, int> counts;      // state -> tasks in it
  size_t present = 0, total = 0;          // points in the store / in the grid
  size_t merged_now = 0;                  // shards merged by this pass
  bool live = false;                      // a task is still queued or running
};
// One pass: asks squeue and sacct for the states of every job the sweep was submitted as, merges
// the shard of each ended task not yet merged (Store::merge: idempotent), and saves the tasks'
// states. A task neither queued nor known to sacct counts CANCELLED (one cancelled before it
// started leaves no accounting record), or COMPLETED when its shard was copied. Throws
// std::invalid_argument for a sweep that does not exist.
SlurmPoll pollSlurmSweep(Store& store, int64_t sweep_id);

}  // namespace attnscope
