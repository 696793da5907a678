#pragma once
// The SQLite store: one file holds environments, sweeps, runs and their trace events, and the
// recordings of programs' attention calls.
// WAL journal, foreign keys on, busy_timeout, prepared statements, one transaction per finished
// run (a crash loses at most the point in flight). Schema version in PRAGMA user_version with
// forward migrations. A newer schema, a non-AttnScope file or a file whose header or schema is
// damaged is refused with a StoreError and left byte-for-byte untouched.
//
// The file is only ever opened through SQLite: a second descriptor on a database this process
// has open would drop every POSIX lock the process holds on it when closed (see store_open.cpp).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result/environment.h"
#include "core/result/recording.h"
#include "core/store/store_error.h"
#include "core/result/run_result.h"
#include "core/spec/sweep_spec.h"
#include "core/trace/trace_event.h"

namespace attnscope {

struct SweepInfo {
  int64_t id = 0;
  std::string name;
  int64_t created_unix_ms = 0;
  // running, finished, cancelled, failed, interrupted, submitted (to a cluster: its points come
  // from the tasks' shards, merged as they finish). A sweep stored as running whose process is
  // gone reads as interrupted.
  std::string state;
  std::string notes;
  std::vector<std::string> tags;
  int64_t environment_id = 0;
  nlohmann::json spec;  // toJson(SweepSpec)
  std::string uuid;     // the same in every shard of one sweep and in every database it is merged into
  // A sweep submitted to a cluster (`sweep --slurm`): {"scheduler": "slurm", "job_id", "tasks",
  // "shared_dir", "partition", ...}; null for a local sweep.
  nlohmann::json cluster;
  // A submitted sweep's Slurm tasks by state as last seen (sweep --wait, slurm status), e.g.
  // {COMPLETED: 2, PENDING: 1}; empty for a local sweep.
  std::map<std::string, int64_t> task_states;
  int64_t run_count = 0;
  int64_t ok_count = 0;
  int64_t ok_every_row = 0;  // of the ok runs, those whose check held every row (Accuracy::everyRow)
  // Non-empty when the row cannot be read (damaged or hand-edited JSON): one line saying why.
  // The other fields but id, name, created and state are then empty.
  std::string error;
};

// "4 ok", or "4 ok (2 not every row checked)" when some ok runs were sampled or not checked.
std::string okSummary(const SweepInfo& sweep);
// Counts `run` into the sweep's ok_count and ok_every_row.
void countOk(SweepInfo& sweep, const RunResult& run);

// How a Store opens its file. read never writes: no schema into an empty file, no journal mode
// change, no migration, no side files left behind, and it works on a read-only file or folder.
enum class StoreMode { create, existing, read };

// One task of a sweep's Slurm array (schema 6, `sweep --slurm`): the points it runs, the shard
// database it copies to the shared folder when done, and what sacct last said of it.
struct SlurmTask {
  std::string job_id;  // the array job's id ("4711"); a resubmission (`slurm resume`) has its own
  int task = 0;        // $SLURM_ARRAY_TASK_ID
  std::string points;  // formatPointList (core/engine/shard.h)
  std::string shard;   // the shard database's path in the shared folder
  std::string state = "PENDING";  // sacct's State: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY...
  std::string elapsed;            // sacct's Elapsed
  bool merged = false;            // its shard is merged into this store
};

// What `Store::merge` did with one source database.
struct MergeReport {
  std::string source;
  // Why the source was refused (not AttnScope's, damaged, newer schema, this very database):
  // nothing of it was added and neither file was modified. Empty when merged.
  std::string refused;
  int64_t sweeps_added = 0;   // new to this store
  int64_t sweeps_joined = 0;  // already here (another shard of one sweep, or merged before): missing points added
  int64_t runs_added = 0, runs_skipped = 0;  // skipped: already here (same run UUID, or same sweep and point)
  int64_t recordings_added = 0, recordings_skipped = 0;
  int64_t events_added = 0;
  std::vector<int64_t> sweeps;  // this store's ids of the source's sweeps, in the source's order
};

class Store {
 public:
  static constexpr int kSchemaVersion = 7;

  // create and existing open for writing (create makes the file when it does not exist) and
  // check up front that the file and its folder can be written (StoreError read_only otherwise);
  // a new file appears complete or not at all. read never writes. Throws StoreError; a refused
  // file is not modified.
  explicit Store(const std::string& path, StoreMode mode = StoreMode::create);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const;
  bool readOnly() const;

  // The full check (PRAGMA integrity_check and foreign_key_check): the problems found, empty when
  // the file is sound. Opening checks only the header, application id and schema; this reads
  // every page, so it runs on demand (attnscope check) and on open after an unclean shutdown.
  std::vector<std::string> check();

  int64_t saveEnvironment(const Environment& env);  // reuses an identical stored one
  Environment environment(int64_t id);

  // A new sweep row, running and owned by this process. `uuid` empty: a new one; else that of the
  // sweep this is a shard of (StoreError invalid when not a UUID, or when this store has it).
  int64_t createSweep(const SweepSpec& spec, int64_t environment_id, const std::string& uuid = {});
  void setSweepState(int64_t sweep_id, std::string_view state);
  // One transaction: the run row, its plan and all its events. Returns the run id.
  int64_t saveRun(int64_t sweep_id, const RunResult& run);

  std::vector<SweepInfo> sweeps();
  std::optional<SweepInfo> sweep(int64_t id);
  // Without trace events. A row that cannot be read comes back as a run with status error and a
  // message saying why, so one damaged row does not hide the others.
  std::vector<RunResult> runs(int64_t sweep_id);
  std::optional<RunResult> run(int64_t run_id, bool with_events = true);
  std::optional<int64_t> sweepOfRun(int64_t run_id);
  std::vector<TraceEvent> events(int64_t run_id);

  void renameSweep(int64_t id, std::string_view name);
  void setSweepNotes(int64_t id, std::string_view notes);
  void setSweepTags(int64_t id, const std::vector<std::string>& tags);
  void deleteSweep(int64_t id);
  void deleteRun(int64_t id);

  // Brings what the database at `source_path` holds and this one lacks into this one, in one
  // transaction: sweeps (one with the same UUID is the same sweep: its missing points are added,
  // each keeping the environment that ran it), runs with their trace events and phases,
  // environments, recordings with their calls. Idempotent: runs are identified by UUID and by
  // (sweep UUID, point index), recordings by UUID; rows saved before schema 6 (no UUID) by one
  // derived from their contents. The source is opened for reading only and checked whole first
  // (Store::check): a foreign, damaged or newer-schema source, or this very file, is refused with
  // the reason in `refused` and nothing changes. A sweep submitted to a cluster turns finished once
  // every point of its grid is here. StoreError when this store cannot be written.
  MergeReport merge(const std::string& source_path);

  // The global point indexes (RunResult::point_index) this store holds for sweep `id`, ascending.
  std::vector<int64_t> pointIndexes(int64_t id);
  // The sweep whose UUID this is, if any.
  std::optional<int64_t> sweepByUuid(const std::string& uuid);
  // Sets a sweep's cluster submission (SweepInfo::cluster) and state in one transaction.
  void setSweepCluster(int64_t id, const nlohmann::json& cluster, std::string_view state);

  // Slurm array tasks of a submitted sweep: saved (insert or replace by job id and task) and read
  // back in job, task order.
  void saveSlurmTasks(int64_t sweep_id, const std::vector<SlurmTask>& tasks);
  std::vector<SlurmTask> slurmTasks(int64_t sweep_id);

  // Recordings (`attnscope record`): saved whole, in one transaction, once the program has ended
  // (its calls included). Returns the id. A store of schema 3 or older, opened for reading, has none.
  int64_t saveRecording(const Recording& recording);
  // Without their calls; a row that cannot be read has `error` set, so it does not hide the others.
  std::vector<Recording> recordings();
  // With its calls; nullopt when there is none of that id.
  std::optional<Recording> recording(int64_t id);
  void renameRecording(int64_t id, std::string_view name);
  void deleteRecording(int64_t id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ATTNSCOPE_DB if set, else $XDG_DATA_HOME/attnscope/runs.sqlite, else
// ~/.local/share/attnscope/runs.sqlite, with ~ from HOME or, when HOME is unset, the password
// database. StoreError invalid when neither gives a home (never the current folder).
std::string defaultDatabasePath();

}  // namespace attnscope
