#include "core/store/store.h"

#include <pwd.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <vector>

#include "core/base/uuid.h"
#include "core/store/store_impl.h"
#include "core/store/store_owner.h"

namespace attnscope {
namespace fs = std::filesystem;

namespace {

// Names are shown in tables, charts and window titles: bounded, printable UTF-8.
void refuseBadName(std::string_view name) {
  if (auto problem = sweepNameProblem(name))
    throw StoreError(StoreError::Kind::invalid, "the sweep name " + *problem);
}

int64_t nowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}


// Columns: id, name, created, state, spec, notes, tags, environment, run count, ok count, then
// the owner (host, boot id, pid, start ticks; NULL without one), the UUID and the cluster JSON
// (NULL before schema 6). A row whose JSON cannot be read
// keeps its id, name, created and state and says why in `error`.
SweepInfo readSweep(SqliteStatement& s, const std::string& path) {
  SweepInfo info;
  info.id = s.columnInt(0);
  info.name = s.columnText(1);
  info.created_unix_ms = s.columnInt(2);
  info.state = s.columnText(3);
  if (info.state == "running" && !s.isNull(11)) {
    ProcessIdentity owner{s.columnText(11), s.columnText(12), s.columnInt(13), s.columnInt(14)};
    if (ownerState(owner) == OwnerState::gone) info.state = "interrupted";
  }
  std::string what = "sweep S" + std::to_string(info.id);
  try {
    if (!isSweepState(info.state))
      throw StoreError(StoreError::Kind::corrupt, path + ": " + what + " has an unknown state '" + info.state +
                                                      "' (running, finished, cancelled, failed, interrupted, submitted)");
    info.spec = parseJsonColumn(s.columnTextView(4), path, what + " spec");
    try {
      (void)sweepSpecFromJson(info.spec);  // every key the readers use is there, with its type
    } catch (const std::exception& e) {
      throw StoreError(StoreError::Kind::corrupt, path + ": " + what + " spec: " + jsonProblem(e));
    }
    info.notes = s.columnText(5);
    nlohmann::json tags = parseJsonColumn(s.columnTextView(6), path, what + " tags");
    for (const auto& t : tags)
      if (t.is_string()) info.tags.push_back(t.get<std::string>());
    info.environment_id = s.isNull(7) ? 0 : s.columnInt(7);
    if (!s.isNull(16) && !s.columnTextView(16).empty())
      info.cluster = parseJsonColumn(s.columnTextView(16), path, what + " cluster");
  } catch (const StoreError& e) {
    SweepInfo unreadable;
    unreadable.id = info.id, unreadable.name = info.name, unreadable.created_unix_ms = info.created_unix_ms;
    unreadable.state = info.state, unreadable.spec = nlohmann::json::object(), unreadable.error = e.what();
    info = std::move(unreadable);
  }
  if (!s.isNull(15)) info.uuid = s.columnText(15);
  info.run_count = s.columnInt(8);
  info.ok_count = s.columnInt(9);
  info.ok_every_row = s.columnInt(10);
  return info;
}

std::string selectSweepsSql(int version) {
  return std::string(
             "SELECT s.id, s.name, s.created_unix_ms, s.state, s.spec, s.notes, s.tags, s.environment_id,"
             " (SELECT count(*) FROM runs r WHERE r.sweep_id = s.id),"
             " (SELECT count(*) FROM runs r WHERE r.sweep_id = s.id AND r.status = 'ok'),"
             " (SELECT count(*) FROM runs r WHERE r.sweep_id = s.id AND r.status = 'ok' AND r.acc_checked = 1"
             " AND r.rows_checked >= r.rows_total), ") +
         (version >= 2 ? "o.host, o.boot_id, o.pid, o.start_ticks," : "NULL, NULL, NULL, NULL,") +
         (version >= 6 ? " s.uuid, s.cluster" : " NULL, NULL") +
         (version >= 2 ? " FROM sweeps s LEFT JOIN sweep_owners o ON o.sweep_id = s.id" : " FROM sweeps s");
}

}  // namespace

std::string okSummary(const SweepInfo& s) {
  const int64_t partial = s.ok_count - s.ok_every_row;
  return std::to_string(s.ok_count) + " ok" + (partial > 0 ? " (" + std::to_string(partial) + " not every row checked)" : "");
}

void countOk(SweepInfo& s, const RunResult& r) {
  if (r.status != RunStatus::ok) return;
  ++s.ok_count;
  if (r.accuracy.everyRow()) ++s.ok_every_row;
}

bool isSweepState(std::string_view s) {
  return s == "running" || s == "finished" || s == "cancelled" || s == "failed" || s == "interrupted" ||
         s == "submitted";
}

SqliteConnection& StoreState::writer() {
  if (read_only || !db) throw StoreError(StoreError::Kind::read_only, path + " was opened for reading; it cannot be changed");
  requireHeldFilesCurrent();
  return *db;
}

void StoreState::requireHeldFilesCurrent() const {
  auto problem = db->heldFileProblem();
  if (!problem) return;
  throw StoreError(StoreError::Kind::replaced,
                   "cannot save to " + path + ": " + *problem +
                       "; saving stops so that nothing is written where no other process can see it, or over what "
                       "others saved since (what this process saved into the deleted file is gone with it); "
                       "check the file with `attnscope check --db " + path + "`");
}

StoreTransaction::StoreTransaction(StoreState& impl) : impl_(impl) {
  impl_.interned_in_transaction.clear();
  SqliteStatement& begin = impl_.db->cached("BEGIN IMMEDIATE");
  SqliteResetGuard guard(begin);
  begin.run();
  // Checked with the write lock held: the files this transaction will write must be the ones
  // every other process sees (sqlite_file_guard.h). The destructor rolls back when this throws.
  impl_.requireHeldFilesCurrent();
}

StoreTransaction::~StoreTransaction() {
  if (done_) return;
  sqlite3* h = impl_.db->handle();
  if (!sqlite3_get_autocommit(h)) sqlite3_exec(h, "ROLLBACK", nullptr, nullptr, nullptr);
  for (const auto& text : impl_.interned_in_transaction) {
    auto it = impl_.string_ids.find(text);
    if (it == impl_.string_ids.end()) continue;
    impl_.string_texts.erase(it->second);
    impl_.string_ids.erase(it);
  }
  impl_.interned_in_transaction.clear();
}

void StoreTransaction::commit() {
  impl_.requireHeldFilesCurrent();
  SqliteStatement& s = impl_.db->cached("COMMIT");
  SqliteResetGuard guard(s);
  s.run();
  done_ = true;
  impl_.interned_in_transaction.clear();
}

int64_t Store::saveEnvironment(const Environment& env) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  const int64_t id = impl_->insertEnvironment(env);
  txn.commit();
  return id;
}

int64_t StoreState::insertEnvironment(const Environment& env) {
  SqliteConnection& db = *this->db;
  std::string json = toJson(env).dump();
  {
    SqliteStatement& s = db.cached(
        "INSERT INTO environments(host, os, cpu, gpu, app_version, git_revision, json) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(json) DO NOTHING");
    SqliteResetGuard guard(s);
    s.bindText(1, env.host);
    s.bindText(2, env.os);
    s.bindText(3, env.cpu);
    s.bindText(4, env.gpus.empty() ? std::string() : env.gpus.front().name);
    s.bindText(5, env.app_version);
    s.bindText(6, env.git_revision);
    s.bindText(7, json);
    s.run();
  }
  SqliteStatement& q = db.cached("SELECT id FROM environments WHERE json = ?");
  SqliteResetGuard guard(q);
  q.bindText(1, json);
  if (!q.step()) throw StoreError(StoreError::Kind::io, path + ": the saved environment cannot be read back");
  int64_t id = q.columnInt(0);
  q.reset();
  return id;
}

void StoreState::sweepRowProblems(std::vector<std::string>& out) {
  {
    SqliteStatement q = db->prepare(selectSweepsSql(version) + " ORDER BY s.id");
    while (q.step())
      if (SweepInfo info = readSweep(q, path); !info.error.empty()) out.push_back("S" + std::to_string(info.id) + ": " + info.error);
  }
  SqliteStatement q = db->prepare("SELECT id, json FROM environments ORDER BY id");
  while (q.step()) {
    const std::string what = "environment " + std::to_string(q.columnInt(0));
    try {
      (void)environmentFromJson(parseJsonColumn(q.columnTextView(1), path, what));
    } catch (const nlohmann::json::exception& e) {
      out.push_back(path + ": " + what + ": " + jsonProblem(e));
    } catch (const StoreError& e) {
      out.push_back(e.what());
    }
  }
}

Environment Store::environment(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) throw StoreError(StoreError::Kind::not_found, impl_->path + ": no environment " + std::to_string(id));
  SqliteStatement& q = impl_->db->cached("SELECT json FROM environments WHERE id = ?");
  SqliteResetGuard guard(q);
  q.bindInt(1, id);
  if (!q.step()) throw StoreError(StoreError::Kind::not_found, impl_->path + ": no environment " + std::to_string(id));
  Environment env;
  try {
    env = environmentFromJson(parseJsonColumn(q.columnTextView(0), impl_->path, "environment " + std::to_string(id)));
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(StoreError::Kind::corrupt, impl_->path + ": environment " + std::to_string(id) + ": " + jsonProblem(e));
  }
  q.reset();
  impl_->verifySnapshot();
  return env;
}

int64_t Store::createSweep(const SweepSpec& spec, int64_t environment_id, const std::string& uuid) {
  refuseBadName(spec.name);
  if (!uuid.empty() && !isUuid(uuid))
    throw StoreError(StoreError::Kind::invalid, "sweep uuid: '" + uuid + "' is not a UUID (8-4-4-4-12 hex digits)");
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  SqliteConnection& db = *impl_->db;
  StoreTransaction txn(*impl_);
  if (environment_id != 0) {
    SqliteStatement& q = db.cached("SELECT 1 FROM environments WHERE id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, environment_id);
    if (!q.step())
      throw StoreError(StoreError::Kind::invalid, impl_->path + ": no environment " + std::to_string(environment_id));
  }
  SqliteStatement& s = db.cached(
      "INSERT INTO sweeps(name, created_unix_ms, state, spec, notes, tags, environment_id, uuid)"
      " VALUES (?, ?, 'running', ?, '', '[]', ?, ?)");
  SqliteResetGuard guard(s);
  s.bindText(1, spec.name);
  s.bindInt(2, nowUnixMs());
  s.bindText(3, toJson(spec).dump());
  if (environment_id != 0) s.bindInt(4, environment_id);
  else s.bindNull(4);
  s.bindText(5, uuid.empty() ? newUuid() : uuid);
  s.run();
  int64_t id = db.lastInsertId();
  s.reset();
  const ProcessIdentity self = thisProcess();
  SqliteStatement& o = db.cached(
      "INSERT INTO sweep_owners(sweep_id, host, boot_id, pid, start_ticks) VALUES (?, ?, ?, ?, ?)");
  SqliteResetGuard owner_guard(o);
  o.bindInt(1, id);
  o.bindText(2, self.host);
  o.bindText(3, self.boot_id);
  o.bindInt(4, self.pid);
  o.bindInt(5, self.start_ticks);
  o.run();
  txn.commit();
  return id;
}

namespace {

// Runs an UPDATE/DELETE of one sweep or run by id; not_found when no row matched.
void changeOne(StoreState& impl, std::string_view sql, std::string_view what, int64_t id,
               const std::function<void(SqliteStatement&)>& bind) {
  // Inside the caller's transaction, or in one of its own (checked like every write).
  std::optional<StoreTransaction> own;
  if (sqlite3_get_autocommit(impl.db->handle())) own.emplace(impl);
  {
    SqliteStatement& s = impl.db->cached(sql);
    SqliteResetGuard guard(s);
    bind(s);
    s.run();
  }
  if (impl.db->changes() == 0)
    throw StoreError(StoreError::Kind::not_found, impl.path + ": no " + std::string(what) + " " + std::to_string(id));
  if (own) own->commit();
}

}  // namespace

void Store::setSweepState(int64_t sweep_id, std::string_view state) {
  if (!isSweepState(state))
    throw StoreError(StoreError::Kind::invalid, "unknown sweep state '" + std::string(state) +
                                                    "' (running, finished, cancelled, failed, interrupted)");
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  changeOne(*impl_, "UPDATE sweeps SET state = ? WHERE id = ?", "sweep", sweep_id, [&](SqliteStatement& s) {
    s.bindText(1, state);
    s.bindInt(2, sweep_id);
  });
}

std::vector<SweepInfo> Store::sweeps() {
  std::lock_guard lock(impl_->mutex);
  std::vector<SweepInfo> out;
  if (!impl_->db) return out;
  {
    SqliteStatement& q = impl_->db->cached(selectSweepsSql(impl_->version) + " ORDER BY s.id");
    SqliteResetGuard guard(q);
    while (q.step()) out.push_back(readSweep(q, impl_->path));
  }
  if (impl_->version >= 6) {
    std::map<int64_t, SweepInfo*> by_id;
    for (SweepInfo& s : out) by_id[s.id] = &s;
    SqliteStatement& t = impl_->db->cached("SELECT sweep_id, state, count(*) FROM slurm_tasks GROUP BY sweep_id, state");
    SqliteResetGuard guard(t);
    while (t.step())
      if (auto it = by_id.find(t.columnInt(0)); it != by_id.end()) it->second->task_states[t.columnText(1)] = t.columnInt(2);
  }
  impl_->verifySnapshot();
  return out;
}

std::optional<SweepInfo> Store::sweep(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) return std::nullopt;
  std::optional<SweepInfo> out;
  {
    SqliteStatement& q = impl_->db->cached(selectSweepsSql(impl_->version) + " WHERE s.id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, id);
    if (q.step()) out = readSweep(q, impl_->path);
  }
  if (out && impl_->version >= 6) {
    SqliteStatement& t = impl_->db->cached("SELECT state, count(*) FROM slurm_tasks WHERE sweep_id = ? GROUP BY state");
    SqliteResetGuard guard(t);
    t.bindInt(1, id);
    while (t.step()) out->task_states[t.columnText(0)] = t.columnInt(1);
  }
  impl_->verifySnapshot();
  return out;
}

void Store::renameSweep(int64_t id, std::string_view name) {
  refuseBadName(name);
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  changeOne(*impl_, "UPDATE sweeps SET name = ? WHERE id = ?", "sweep", id, [&](SqliteStatement& s) {
    s.bindText(1, name);
    s.bindInt(2, id);
  });
}

void Store::setSweepNotes(int64_t id, std::string_view notes) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  changeOne(*impl_, "UPDATE sweeps SET notes = ? WHERE id = ?", "sweep", id, [&](SqliteStatement& s) {
    s.bindText(1, notes);
    s.bindInt(2, id);
  });
}

void Store::setSweepTags(int64_t id, const std::vector<std::string>& tags) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  std::string json = nlohmann::json(tags).dump();
  changeOne(*impl_, "UPDATE sweeps SET tags = ? WHERE id = ?", "sweep", id, [&](SqliteStatement& s) {
    s.bindText(1, json);
    s.bindInt(2, id);
  });
}

void Store::deleteSweep(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  changeOne(*impl_, "DELETE FROM sweeps WHERE id = ?", "sweep", id, [&](SqliteStatement& s) { s.bindInt(1, id); });
  txn.commit();
}

void Store::deleteRun(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  changeOne(*impl_, "DELETE FROM runs WHERE id = ?", "run", id, [&](SqliteStatement& s) { s.bindInt(1, id); });
  txn.commit();
}

namespace {

// The home folder of this process's user from the password database (HOME may be unset in
// cron jobs, systemd units and `env -i`); empty when there is none.
std::string passwordDatabaseHome() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buf(static_cast<size_t>(size > 0 ? size : 16384));
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &pw, buf.data(), buf.size(), &found) != 0 || !found || !found->pw_dir) return {};
  std::string home = found->pw_dir;
  return fs::path(home).is_absolute() ? home : std::string();
}

}  // namespace

std::string defaultDatabasePath() {
  if (const char* db = std::getenv("ATTNSCOPE_DB"); db && *db) return db;
  fs::path base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg && fs::path(xdg).is_absolute()) base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home) base = fs::path(home) / ".local" / "share";
  else if (std::string home = passwordDatabaseHome(); !home.empty()) base = fs::path(home) / ".local" / "share";
  else
    // Never the current folder: every working folder would get a database of its own.
    throw StoreError(StoreError::Kind::invalid,
                     "no default database: HOME is not set and the password database has no home folder for this "
                     "user; give --db FILE or set ATTNSCOPE_DB");
  return (base / "attnscope" / "runs.sqlite").string();
}

}  // namespace attnscope
