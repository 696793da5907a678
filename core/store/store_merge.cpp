// Bringing databases together (`attnscope merge`): the shards of one sweep run on many machines,
// or runs made on two workstations. Identity is by UUID (schema 6), so merging twice adds nothing.
// Also the Slurm tasks of a submitted sweep, which the cluster commands keep beside it.
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <set>

#include "core/base/uuid.h"
#include "core/store/store.h"
#include "core/store/store_impl.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;

// The spec without its name: two rows with one UUID must be one grid (the name may be edited).
nlohmann::json gridOf(const nlohmann::json& spec) {
  nlohmann::json j = spec;
  if (j.is_object()) j.erase("name");
  return j;
}

// finished < interrupted < cancelled < failed: the shards of one sweep end as the worst of them.
int stateRank(std::string_view s) {
  if (s == "failed") return 4;
  if (s == "cancelled") return 3;
  if (s == "interrupted" || s == "running") return 2;
  if (s == "submitted") return 1;
  return 0;
}

// A UUID for a row of a file older than schema 6, from what it holds.
std::string legacySweepUuid(const SweepInfo& s) {
  return contentUuid("sweep|" + std::to_string(s.created_unix_ms) + "|" + s.spec.dump());
}
std::string legacyRunUuid(const std::string& sweep_uuid, const RunResult& r) {
  return contentUuid("run|" + sweep_uuid + "|" + std::to_string(r.id) + "|" + std::to_string(r.started_unix_ms) + "|" +
                     r.backend + "|" + toJson(r.spec).dump());
}

}  // namespace

MergeReport Store::merge(const std::string& source_path) {
  MergeReport report;
  report.source = source_path;
  {
    std::error_code ec;
    if (fs::equivalent(source_path, impl_->path, ec)) {
      report.refused = source_path + " is the database being merged into";
      return report;
    }
  }
  std::unique_ptr<Store> source;
  try {
    source = std::make_unique<Store>(source_path, StoreMode::read);
    if (auto problems = source->check(); !problems.empty()) {
      report.refused = source_path + " is damaged (" + problems.front() +
                       (problems.size() > 1 ? "; " + std::to_string(problems.size() - 1) + " more problems" : "") +
                       "); `attnscope check --db " + source_path + "` lists them";
      return report;
    }
  } catch (const StoreError& e) {
    report.refused = e.what();
    return report;
  }
  const std::vector<SweepInfo> sweeps = source->sweeps();
  const std::vector<Recording> recordings = source->recordings();

  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  SqliteConnection& db = *impl_->db;
  StoreTransaction txn(*impl_);
  std::map<int64_t, int64_t> environments;  // source id -> this store's
  auto environment = [&](int64_t source_id) -> int64_t {
    if (source_id == 0) return 0;
    if (auto it = environments.find(source_id); it != environments.end()) return it->second;
    return environments[source_id] = impl_->insertEnvironment(source->environment(source_id));
  };

  for (const SweepInfo& sw : sweeps) {
    const std::string uuid = sw.uuid.empty() ? legacySweepUuid(sw) : sw.uuid;
    int64_t target = 0;
    std::string target_state;
    nlohmann::json target_cluster;
    {
      SqliteStatement& q = db.cached("SELECT id, spec, state, cluster FROM sweeps WHERE uuid = ?");
      SqliteResetGuard guard(q);
      q.bindText(1, uuid);
      if (q.step()) {
        target = q.columnInt(0);
        const nlohmann::json spec = parseJsonColumn(q.columnTextView(1), impl_->path, "sweep S" + std::to_string(target) + " spec");
        if (gridOf(spec) != gridOf(sw.spec))
          throw StoreError(StoreError::Kind::invalid,
                           source_path + ": sweep S" + std::to_string(sw.id) + " has the UUID of S" + std::to_string(target) +
                               " in " + impl_->path + " but another grid; nothing was merged");
        target_state = q.columnText(2);
        if (!q.columnTextView(3).empty())
          target_cluster = parseJsonColumn(q.columnTextView(3), impl_->path, "sweep S" + std::to_string(target) + " cluster");
      }
    }
    if (target == 0) {
      // A copy never runs here: a sweep still running elsewhere reads as interrupted until merged
      // again once it ends.
      const std::string state = sw.state == "running" ? "interrupted" : sw.state;
      SqliteStatement& s = db.cached(
          "INSERT INTO sweeps(name, created_unix_ms, state, spec, notes, tags, environment_id, uuid, cluster)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
      SqliteResetGuard guard(s);
      s.bindText(1, sw.name);
      s.bindInt(2, sw.created_unix_ms);
      s.bindText(3, state);
      s.bindText(4, sw.spec.dump());
      s.bindText(5, sw.notes);
      s.bindText(6, nlohmann::json(sw.tags).dump());
      if (const int64_t env = environment(sw.environment_id)) s.bindInt(7, env);
      else s.bindNull(7);
      s.bindText(8, uuid);
      s.bindText(9, sw.cluster.is_null() ? std::string() : sw.cluster.dump());
      s.run();
      target = db.lastInsertId();
      target_state = state;
      ++report.sweeps_added;
    } else {
      ++report.sweeps_joined;
    }
    report.sweeps.push_back(target);

    std::set<int64_t> points;
    {
      SqliteStatement& q = db.cached("SELECT point_index FROM runs WHERE sweep_id = ? AND point_index IS NOT NULL");
      SqliteResetGuard guard(q);
      q.bindInt(1, target);
      while (q.step()) points.insert(q.columnInt(0));
    }
    for (RunResult run : source->runs(sw.id)) {
      if (run.uuid.empty()) run.uuid = legacyRunUuid(uuid, run);
      bool present = run.point_index >= 0 && points.count(run.point_index);
      if (!present) {
        SqliteStatement& q = db.cached("SELECT 1 FROM runs WHERE uuid = ?");
        SqliteResetGuard guard(q);
        q.bindText(1, run.uuid);
        present = q.step();
      }
      if (present) {
        ++report.runs_skipped;
        continue;
      }
      run.trace.events = source->events(run.id);
      run.environment_id = environment(run.environment_id != 0 ? run.environment_id : sw.environment_id);
      impl_->insertRun(target, run);
      if (run.point_index >= 0) points.insert(run.point_index);
      ++report.runs_added;
      report.events_added += static_cast<int64_t>(run.trace.events.size());
    }

    // The sweep's state: a submitted one is finished once every point is here; shards joined by
    // hand end as the worst of their states.
    std::string state = target_state;
    if (target_state == "submitted" || (!target_cluster.is_null() && target_state != "cancelled")) {
      const SweepSpec spec = sweepSpecFromJson(sw.spec);
      if (static_cast<size_t>(points.size()) >= spec.pointCount()) state = "finished";
    } else if (report.sweeps_joined && stateRank(sw.state == "running" ? "interrupted" : sw.state) > stateRank(target_state)) {
      state = sw.state == "running" ? "interrupted" : sw.state;
    }
    if (state != target_state) {
      SqliteStatement& u = db.cached("UPDATE sweeps SET state = ? WHERE id = ?");
      SqliteResetGuard guard(u);
      u.bindText(1, state);
      u.bindInt(2, target);
      u.run();
    }
  }

  for (const Recording& listed : recordings) {
    std::optional<Recording> rec = source->recording(listed.id);
    if (!rec) continue;
    if (rec->uuid.empty())
      rec->uuid = contentUuid("recording|" + std::to_string(rec->started_unix_ms) + "|" + rec->name + "|" +
                              nlohmann::json(rec->program).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    {
      SqliteStatement& q = db.cached("SELECT 1 FROM recordings WHERE uuid = ?");
      SqliteResetGuard guard(q);
      q.bindText(1, rec->uuid);
      if (q.step()) {
        ++report.recordings_skipped;
        continue;
      }
    }
    rec->environment_id = environment(rec->environment_id);
    impl_->insertRecording(*rec);
    ++report.recordings_added;
  }
  txn.commit();
  return report;
}

std::vector<int64_t> Store::pointIndexes(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  std::vector<int64_t> out;
  if (!impl_->db || impl_->version < 6) return out;
  {
    SqliteStatement& q =
        impl_->db->cached("SELECT DISTINCT point_index FROM runs WHERE sweep_id = ? AND point_index IS NOT NULL ORDER BY 1");
    SqliteResetGuard guard(q);
    q.bindInt(1, id);
    while (q.step()) out.push_back(q.columnInt(0));
  }
  impl_->verifySnapshot();
  return out;
}

std::optional<int64_t> Store::sweepByUuid(const std::string& uuid) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db || impl_->version < 6) return std::nullopt;
  std::optional<int64_t> out;
  {
    SqliteStatement& q = impl_->db->cached("SELECT id FROM sweeps WHERE uuid = ?");
    SqliteResetGuard guard(q);
    q.bindText(1, uuid);
    if (q.step()) out = q.columnInt(0);
  }
  impl_->verifySnapshot();
  return out;
}

void Store::setSweepCluster(int64_t id, const nlohmann::json& cluster, std::string_view state) {
  if (!isSweepState(state)) throw StoreError(StoreError::Kind::invalid, "unknown sweep state '" + std::string(state) + "'");
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  SqliteStatement& s = impl_->db->cached("UPDATE sweeps SET cluster = ?, state = ? WHERE id = ?");
  {
    SqliteResetGuard guard(s);
    s.bindText(1, cluster.is_null() ? std::string() : cluster.dump());
    s.bindText(2, state);
    s.bindInt(3, id);
    s.run();
  }
  if (impl_->db->changes() == 0) throw StoreError(StoreError::Kind::not_found, impl_->path + ": no sweep " + std::to_string(id));
  // A submitted sweep has no process of its own here: its owner row would read it as interrupted.
  SqliteStatement& o = impl_->db->cached("DELETE FROM sweep_owners WHERE sweep_id = ?");
  {
    SqliteResetGuard guard(o);
    o.bindInt(1, id);
    o.run();
  }
  txn.commit();
}

void Store::saveSlurmTasks(int64_t sweep_id, const std::vector<SlurmTask>& tasks) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  SqliteStatement& s = impl_->db->cached(
      "INSERT OR REPLACE INTO slurm_tasks(sweep_id, job_id, task, points, shard, state, elapsed, merged)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  SqliteResetGuard guard(s);
  for (const SlurmTask& t : tasks) {
    s.bindInt(1, sweep_id);
    s.bindText(2, t.job_id);
    s.bindInt(3, t.task);
    s.bindText(4, t.points);
    s.bindText(5, t.shard);
    s.bindText(6, t.state);
    s.bindText(7, t.elapsed);
    s.bindInt(8, t.merged ? 1 : 0);
    s.run();
    s.reset();
  }
  txn.commit();
}

std::vector<SlurmTask> Store::slurmTasks(int64_t sweep_id) {
  std::lock_guard lock(impl_->mutex);
  std::vector<SlurmTask> out;
  if (!impl_->db || impl_->version < 6) return out;
  {
    SqliteStatement& q = impl_->db->cached(
        "SELECT job_id, task, points, shard, state, elapsed, merged FROM slurm_tasks WHERE sweep_id = ?"
        " ORDER BY CAST(job_id AS INTEGER), job_id, task");
    SqliteResetGuard guard(q);
    q.bindInt(1, sweep_id);
    while (q.step())
      out.push_back({q.columnText(0), static_cast<int>(q.columnInt(1)), q.columnText(2), q.columnText(3), q.columnText(4),
                     q.columnText(5), q.columnInt(6) != 0});
  }
  impl_->verifySnapshot();
  return out;
}

}  // namespace attnscope
