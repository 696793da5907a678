// Recordings of programs' attention calls (`attnscope record`): the recordings and
// recording_calls tables of schema 4. A recording is saved whole once its program has ended, in
// one transaction, so a crash leaves it complete or absent.
#include <sqlite3.h>

#include <functional>

#include "core/base/uuid.h"
#include "core/store/store.h"
#include "core/store/store_impl.h"

namespace attnscope {
namespace {

// The uuid column is new in schema 6 (a read-only store reads older files as they are).
std::string selectRecordingsSql(int version) {
  return std::string(
             "SELECT r.id, r.name, r.created_unix_ms, r.ended_unix_ms, r.program, r.cwd, r.exit_status, r.exit_signal,"
             " r.interrupted, r.complete, r.stderr_tail, r.note, r.torch, r.calls_seen, r.calls_dropped, r.overhead_s,"
             " r.environment_id, ") +
         (version >= 6 ? "r.uuid" : "NULL") + " FROM recordings r";
}

// A row into a recording; one whose JSON cannot be read keeps id, name and times and says why.
Recording readRecording(SqliteStatement& s, const std::string& path) {
  Recording r;
  r.id = s.columnInt(0);
  r.name = s.columnText(1);
  r.started_unix_ms = s.columnInt(2);
  r.ended_unix_ms = s.columnInt(3);
  if (!s.isNull(17)) r.uuid = s.columnText(17);
  const std::string what = "recording " + r.idText();
  try {
    const nlohmann::json program = parseJsonColumn(s.columnTextView(4), path, what + " program");
    if (!program.is_array()) throw StoreError(StoreError::Kind::corrupt, path + ": " + what + " program is not a list");
    for (const auto& a : program)
      if (a.is_string()) r.program.push_back(a.get<std::string>());
    r.cwd = s.columnText(5);
    if (!s.isNull(6)) r.exit_status = static_cast<int>(s.columnInt(6));
    r.exit_signal = static_cast<int>(s.columnInt(7));
    r.interrupted = s.columnInt(8) != 0;
    r.complete = s.columnInt(9) != 0;
    r.stderr_tail = s.columnText(10);
    r.note = s.columnText(11);
    r.torch = parseJsonColumn(s.columnTextView(12), path, what + " torch");
    r.calls_seen = s.columnInt(13);
    r.calls_dropped = s.columnInt(14);
    r.overhead_s = s.isNull(15) ? 0 : s.columnDouble(15);
    r.environment_id = s.isNull(16) ? 0 : s.columnInt(16);
  } catch (const StoreError& e) {
    Recording kept;
    kept.id = r.id;
    kept.name = r.name;
    kept.started_unix_ms = r.started_unix_ms;
    kept.ended_unix_ms = r.ended_unix_ms;
    kept.uuid = r.uuid;
    kept.error = e.what();
    return kept;
  }
  return r;
}

bool hasRecordings(const StoreState& impl) { return impl.db && impl.version >= 4; }

}  // namespace

int64_t Store::saveRecording(const Recording& rec) {
  if (auto problem = sweepNameProblem(rec.name))
    throw StoreError(StoreError::Kind::invalid, "the recording name " + *problem);
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  const int64_t id = impl_->insertRecording(rec);
  txn.commit();
  return id;
}

int64_t StoreState::insertRecording(const Recording& rec) {
  if (!rec.uuid.empty() && !isUuid(rec.uuid))
    throw StoreError(StoreError::Kind::invalid, "cannot save a recording whose uuid '" + rec.uuid + "' is not a UUID");
  SqliteConnection& db = *this->db;
  SqliteStatement& s = db.cached(
      "INSERT INTO recordings(name, created_unix_ms, ended_unix_ms, program, cwd, exit_status, exit_signal, interrupted,"
      " complete, stderr_tail, note, torch, calls_seen, calls_dropped, overhead_s, environment_id, uuid)"
      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  {
    SqliteResetGuard guard(s);
    s.bindText(1, rec.name);
    s.bindInt(2, rec.started_unix_ms);
    s.bindInt(3, rec.ended_unix_ms);
    s.bindText(4, nlohmann::json(rec.program).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    s.bindText(5, rec.cwd);
    if (rec.exit_status) s.bindInt(6, *rec.exit_status);
    else s.bindNull(6);
    s.bindInt(7, rec.exit_signal);
    s.bindInt(8, rec.interrupted ? 1 : 0);
    s.bindInt(9, rec.complete ? 1 : 0);
    s.bindText(10, rec.stderr_tail);
    s.bindText(11, rec.note);
    s.bindText(12, rec.torch.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    s.bindInt(13, rec.calls_seen);
    s.bindInt(14, rec.calls_dropped);
    s.bindDouble(15, rec.overhead_s);
    if (rec.environment_id != 0) s.bindInt(16, rec.environment_id);
    else s.bindNull(16);
    s.bindText(17, rec.uuid.empty() ? newUuid() : rec.uuid);
    s.run();
  }
  const int64_t id = db.lastInsertId();
  SqliteStatement& c =
      db.cached("INSERT INTO recording_calls(recording_id, row, site, module, count, call) VALUES (?, ?, ?, ?, ?, ?)");
  SqliteResetGuard guard(c);
  for (const RecordedCall& call : rec.calls) {
    c.bindInt(1, id);
    c.bindInt(2, call.row);
    c.bindText(3, call.site);
    c.bindText(4, call.module);
    c.bindInt(5, call.forward.count);
    c.bindText(6, call.raw.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    c.run();
    c.resetKeepingBindings();
  }
  return id;
}

std::vector<Recording> Store::recordings() {
  std::lock_guard lock(impl_->mutex);
  std::vector<Recording> out;
  if (!hasRecordings(*impl_)) return out;
  {
    SqliteStatement& q = impl_->db->cached(selectRecordingsSql(impl_->version) + " ORDER BY r.id");
    SqliteResetGuard guard(q);
    while (q.step()) out.push_back(readRecording(q, impl_->path));
  }
  impl_->verifySnapshot();
  return out;
}

std::optional<Recording> Store::recording(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  if (!hasRecordings(*impl_)) return std::nullopt;
  std::optional<Recording> out;
  {
    SqliteStatement& q = impl_->db->cached(selectRecordingsSql(impl_->version) + " WHERE r.id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, id);
    if (q.step()) out = readRecording(q, impl_->path);
  }
  if (out && out->error.empty()) {
    SqliteStatement& c = impl_->db->cached("SELECT row, call FROM recording_calls WHERE recording_id = ? ORDER BY row");
    SqliteResetGuard guard(c);
    c.bindInt(1, id);
    while (c.step()) {
      const int64_t row = c.columnInt(0);
      try {
        out->calls.push_back(recordedCallFromJson(
            parseJsonColumn(c.columnTextView(1), impl_->path, out->idText() + " call " + std::to_string(row)), row));
      } catch (const std::exception& e) {
        // One damaged call does not hide the others: it reads as a call that says why.
        RecordedCall bad;
        bad.row = row;
        bad.notes.push_back(std::string("this stored call cannot be read: ") + e.what());
        out->calls.push_back(std::move(bad));
      }
    }
  }
  impl_->verifySnapshot();
  return out;
}

namespace {

// One UPDATE or DELETE of a recording by id, in its own transaction; not_found when none matched.
void changeRecording(StoreState& impl, std::string_view sql, int64_t id, const std::function<void(SqliteStatement&)>& bind) {
  impl.writer();
  StoreTransaction txn(impl);
  SqliteStatement& s = impl.db->cached(sql);
  {
    SqliteResetGuard guard(s);
    bind(s);
    s.run();
  }
  if (impl.db->changes() == 0) throw StoreError(StoreError::Kind::not_found, impl.path + ": no recording REC" + std::to_string(id));
  txn.commit();
}

}  // namespace

void Store::renameRecording(int64_t id, std::string_view name) {
  if (auto problem = sweepNameProblem(name))
    throw StoreError(StoreError::Kind::invalid, "the recording name " + *problem);
  std::lock_guard lock(impl_->mutex);
  changeRecording(*impl_, "UPDATE recordings SET name = ? WHERE id = ?", id, [&](SqliteStatement& s) {
    s.bindText(1, name);
    s.bindInt(2, id);
  });
}

void Store::deleteRecording(int64_t id) {
  std::lock_guard lock(impl_->mutex);
  changeRecording(*impl_, "DELETE FROM recordings WHERE id = ?", id, [&](SqliteStatement& s) { s.bindInt(1, id); });
}

void StoreState::recordingRowProblems(std::vector<std::string>& out) {
  if (!db || version < 4) return;
  {
    SqliteStatement q = db->prepare(selectRecordingsSql(version) + " ORDER BY r.id");
    while (q.step())
      if (Recording r = readRecording(q, path); !r.error.empty()) out.push_back(r.idText() + ": " + r.error);
  }
  SqliteStatement c = db->prepare("SELECT recording_id, row, call FROM recording_calls ORDER BY recording_id, row");
  while (c.step()) {
    const std::string what = "REC" + std::to_string(c.columnInt(0)) + " call " + std::to_string(c.columnInt(1));
    try {
      (void)recordedCallFromJson(parseJsonColumn(c.columnTextView(2), path, what), c.columnInt(1));
    } catch (const std::exception& e) {
      out.push_back(what + ": " + e.what());
    }
  }
}

}  // namespace attnscope
