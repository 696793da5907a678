// Runs and their trace events: the part of the store written once per finished point.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/base/uuid.h"
#include "core/spec/spec_fields.h"
#include "core/store/store.h"
#include "core/store/store_impl.h"

namespace attnscope {
namespace {

// Event enumerations are stored as these integers: append new values, never renumber.
static_assert(static_cast<int>(EventKind::kernel) == 0 && static_cast<int>(EventKind::memcpy) == 1 &&
                  static_cast<int>(EventKind::memset) == 2 && static_cast<int>(EventKind::alloc) == 3 &&
                  static_cast<int>(EventKind::free) == 4 && static_cast<int>(EventKind::pool_reserve) == 5 &&
                  static_cast<int>(EventKind::pool_release) == 6 && static_cast<int>(EventKind::phase) == 7,
              "EventKind values are stored in the events table");
static_assert(static_cast<int>(EventSource::allocator) == 0 && static_cast<int>(EventSource::cupti) == 1 &&
                  static_cast<int>(EventSource::host) == 2,
              "EventSource values are stored in the events table");
static_assert(static_cast<int>(MemoryKind::host) == 0 && static_cast<int>(MemoryKind::device) == 1 &&
                  static_cast<int>(MemoryKind::pinned) == 2 && static_cast<int>(MemoryKind::managed) == 3 &&
                  static_cast<int>(MemoryKind::pool) == 4,
              "MemoryKind values are stored in the events table");
constexpr int64_t kMaxEventKind = 7, kMaxEventSource = 2, kMaxMemoryKind = 4;

// Kernel launch facts as a blob of nine zigzag varints: grid[3], block[3], registers, static and
// dynamic shared memory (typically 12 bytes instead of 36 fixed). NULL when all are zero, which
// is every event but kernels.
constexpr size_t kKernelBlobMax = 9 * 5;

bool isZero(const KernelInfo& k) {
  return k.grid[0] == 0 && k.grid[1] == 0 && k.grid[2] == 0 && k.block[0] == 0 && k.block[1] == 0 &&
         k.block[2] == 0 && k.registers == 0 && k.static_smem == 0 && k.dynamic_smem == 0;
}

size_t packKernel(const KernelInfo& k, unsigned char* out) {
  const int32_t values[9] = {k.grid[0],  k.grid[1],     k.grid[2],       k.block[0],     k.block[1],
                             k.block[2], k.registers, k.static_smem, k.dynamic_smem};
  size_t n = 0;
  for (int32_t v : values) {
    uint32_t z = (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
    while (z >= 0x80) {
      out[n++] = static_cast<unsigned char>(z | 0x80);
      z >>= 7;
    }
    out[n++] = static_cast<unsigned char>(z);
  }
  return n;
}

// False when the blob is not nine well-formed varints.
bool unpackKernel(std::string_view blob, KernelInfo& k) {
  int32_t v[9];
  size_t pos = 0;
  for (int i = 0; i < 9; ++i) {
    uint32_t z = 0;
    for (int shift = 0;; shift += 7) {
      if (pos >= blob.size() || shift > 28) return false;
      auto byte = static_cast<unsigned char>(blob[pos++]);
      z |= static_cast<uint32_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
    }
    v[i] = static_cast<int32_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  if (pos != blob.size()) return false;
  k.grid[0] = v[0], k.grid[1] = v[1], k.grid[2] = v[2];
  k.block[0] = v[3], k.block[1] = v[4], k.block[2] = v[5];
  k.registers = v[6], k.static_smem = v[7], k.dynamic_smem = v[8];
  return true;
}

// The runs columns after id and sweep_id, in the order bound and read below: the run's identity,
// the spec's columns from the field table (core/spec/spec_fields.h), then the measurements. A spec
// column newer than the file's schema (a read-only store reads older files as they are) is read
// as its default: older rows are what the field's default means.
std::string runColumns(int version) {
  std::string cols = "backend, device, status, message";
  for (const SpecField& f : specFields())
    for (const StoreColumn& c : f.columns)
      cols += ", " + (c.since_schema > version ? std::string(c.sql_default) : std::string(c.name));
  return cols +
         ", warmup, reps, median_s, min_s, max_s, samples, flops, predicted_peak, measured_peak, cupti_peak, io_bytes,"
         " available, acc_checked, max_abs_error, rel_l2_error, rows_checked, rows_total, tolerance, plan, capture_note,"
         " dropped_records, event_count, started_unix_ms, wall_s" +
         std::string(version >= 6 ? ", uuid, point_index, environment_id" : ", NULL, NULL, NULL");
}

int runColumnCount() {
  int n = 4 + 24 + 3;
  for (const SpecField& f : specFields()) n += static_cast<int>(f.columns.size());
  return n;
}

// Binds consecutive parameters, so the order reads like the column list.
struct Binder {
  SqliteStatement& s;
  int next;
  void i(int64_t v) { s.bindInt(next++, v); }
  void d(double v) { s.bindDouble(next++, v); }
  void t(std::string_view v) { s.bindText(next++, v); }
  void null() { s.bindNull(next++); }
};

[[noreturn]] void corrupt(const std::string& path, const std::string& what);

// Reads a row's columns in order, refusing a value of the wrong type: SQLite converts 'lots' in
// an INTEGER column to 0 without a word, which a reader would then show as measured.
struct Reader {
  const SqliteStatement& s;
  int next;
  const std::string& path;
  int64_t run_id;
  void expect(bool ok, const char* type) const {
    if (ok) return;
    corrupt(path, "run " + std::to_string(run_id) + " has '" + std::string(s.columnTextView(next)) + "' in column " +
                      s.columnName(next) + ", which holds " + type);
  }
  int64_t i() {
    expect(s.columnType(next) == SqliteStatement::Type::integer, "integers");
    return s.columnInt(next++);
  }
  double d() {  // NULL is NaN (SQLite stores NaN as NULL)
    const auto t = s.columnType(next);
    expect(t == SqliteStatement::Type::real || t == SqliteStatement::Type::integer || t == SqliteStatement::Type::null,
           "numbers");
    return s.columnDouble(next++);
  }
  std::string t() { return std::string(view()); }
  std::string_view view() {
    expect(s.columnType(next) == SqliteStatement::Type::text, "text");
    return s.columnTextView(next++);
  }
  bool isNull() const { return s.isNull(next); }
};

std::string samplesJson(const std::vector<double>& samples) {
  nlohmann::json j = nlohmann::json::array();
  for (double v : samples) j.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
  return j.dump();
}

std::vector<double> samplesFromJson(std::string_view text, const std::string& path) {
  std::vector<double> out;
  for (const auto& v : parseJsonColumn(text, path, "timing samples"))
    out.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
  return out;
}

[[noreturn]] void corrupt(const std::string& path, const std::string& what) {
  throw StoreError(StoreError::Kind::corrupt, path + ": " + what + " (the database file is damaged)");
}

// The plan column also carries the backend's facts about the run ("run_facts": which kernel
// PyTorch ran, torch's versions), so out-of-process backends needed no schema migration.
std::string planColumn(const RunResult& r) {
  nlohmann::json j = toJson(r.plan);
  if (!r.facts.empty()) j["run_facts"] = r.facts;
  return j.dump();
}

void bindRun(SqliteStatement& s, int64_t sweep_id, const RunResult& r) {
  Binder b{s, 1};
  b.i(sweep_id);
  b.t(r.backend), b.t(r.device), b.t(toString(r.status)), b.t(r.message);
  for (const SpecField& f : specFields())
    for (const StoreValue& v : f.store(r.spec)) {
      if (auto* i = std::get_if<int64_t>(&v)) b.i(*i);
      else if (auto* d = std::get_if<double>(&v)) b.d(*d);
      else if (auto* t = std::get_if<std::string>(&v)) b.t(*t);
      else b.null();
    }
  b.i(r.timing.warmup), b.i(r.timing.reps), b.d(r.timing.median_s), b.d(r.timing.min_s), b.d(r.timing.max_s);
  b.t(samplesJson(r.timing.samples_s)), b.d(r.flops);
  b.i(r.memory.predicted_peak), b.i(r.memory.measured_peak), b.i(r.memory.cupti_peak), b.i(r.memory.io_bytes);
  b.i(r.memory.available);
  b.i(r.accuracy.checked ? 1 : 0), b.d(r.accuracy.max_abs_error), b.d(r.accuracy.rel_l2_error);
  b.i(r.accuracy.rows_checked), b.i(r.accuracy.rows_total), b.d(r.accuracy.tolerance);
  b.t(planColumn(r)), b.t(r.trace.capture_note), b.i(r.trace.dropped_records);
  b.i(static_cast<int64_t>(r.trace.events.size())), b.i(r.started_unix_ms), b.d(r.wall_s);
  b.t(r.uuid);
  if (r.point_index >= 0) b.i(r.point_index);
  else b.null();
  if (r.environment_id > 0) b.i(r.environment_id);
  else b.null();
}

// Reads "SELECT id, sweep_id, <kRunColumns>" into a RunResult (without events).
RunResult readRun(const SqliteStatement& s, const std::string& path) {
  RunResult r;
  Reader c{s, 0, path, s.columnInt(0)};
  r.id = c.i();
  c.i();  // sweep_id
  r.backend = c.t(), r.device = c.t();
  std::string status = c.t();
  auto st = parseRunStatus(status);
  if (!st) corrupt(path, "run " + std::to_string(r.id) + " has an unknown status '" + status + "'");
  r.status = *st;
  r.message = c.t();
  for (const SpecField& f : specFields()) {
    std::vector<StoreValue> values;
    for (const StoreColumn& col : f.columns) {
      if (c.isNull()) {
        values.emplace_back(std::monostate{});
        c.next++;
      } else if (col.sql.starts_with("INTEGER")) {
        values.emplace_back(c.i());
      } else if (col.sql.starts_with("REAL")) {
        values.emplace_back(c.d());
      } else {
        values.emplace_back(c.t());
      }
    }
    if (auto problem = f.load(r.spec, values)) corrupt(path, "run " + std::to_string(r.id) + " has " + *problem);
  }
  // What the engine would never have run (heads 0, a window wider than allowed) is a damaged row,
  // not a run to show with figures computed from it.
  if (auto errors = validate(r.spec); !errors.empty())
    corrupt(path, "run " + std::to_string(r.id) + " has an impossible workload (" + errors.front().message + ")");
  r.timing.warmup = static_cast<int>(c.i()), r.timing.reps = static_cast<int>(c.i());
  r.timing.median_s = c.d(), r.timing.min_s = c.d(), r.timing.max_s = c.d();
  r.timing.samples_s = samplesFromJson(c.view(), path);
  r.flops = c.d();
  r.memory.predicted_peak = c.i(), r.memory.measured_peak = c.i(), r.memory.cupti_peak = c.i();
  r.memory.io_bytes = c.i(), r.memory.available = c.i();
  r.accuracy.checked = c.i() != 0;
  r.accuracy.max_abs_error = c.d(), r.accuracy.rel_l2_error = c.d();
  r.accuracy.rows_checked = c.i(), r.accuracy.rows_total = c.i(), r.accuracy.tolerance = c.d();
  try {
    const nlohmann::json plan = parseJsonColumn(c.view(), path, "run " + std::to_string(r.id) + " plan");
    r.plan = memoryPlanFromJson(plan);
    if (std::string problem = r.plan.problem(); !problem.empty())
      corrupt(path, "run " + std::to_string(r.id) + " plan: " + problem);
    r.facts = plan.value("run_facts", std::map<std::string, std::string>{});
  } catch (const nlohmann::json::exception& e) {
    corrupt(path, "run " + std::to_string(r.id) + " plan: " + jsonProblem(e));
  }
  r.trace.capture_note = c.t();
  r.trace.dropped_records = c.i();
  c.i();  // event_count
  r.started_unix_ms = c.i();
  r.wall_s = c.d();
  if (!c.isNull()) r.uuid = c.t();
  else c.next++;
  if (!c.isNull()) r.point_index = c.i();
  else c.next++;
  if (!c.isNull()) r.environment_id = c.i();
  else c.next++;
  return r;
}

// A row readRun refused: its id and what can be read of who ran it, as a run with status error
// whose message says why, and no figures (nothing in it is shown as measured).
RunResult unreadableRun(const SqliteStatement& s, const StoreError& e) {
  RunResult r;
  r.id = s.columnInt(0);
  r.backend = s.columnText(2);
  r.device = s.columnText(3);
  r.status = RunStatus::error;
  r.message = std::string("this run's row cannot be read: ") + e.what();
  return r;
}

// Written only into files of this build's schema (writing migrates first).
std::string insertRunSql() {
  std::string sql = "INSERT INTO runs(sweep_id, " + runColumns(Store::kSchemaVersion) + ") VALUES (?";
  for (int i = 0; i < runColumnCount(); ++i) sql += ", ?";
  return sql + ")";
}

std::string selectRunSql(int version) { return "SELECT id, sweep_id, " + runColumns(version) + " FROM runs"; }

}  // namespace

int64_t StoreState::internString(std::string_view text) {
  if (auto it = string_ids.find(text); it != string_ids.end()) return it->second;
  std::string key(text);
  int64_t id = 0;
  {
    SqliteStatement& q = db->cached("SELECT id FROM strings WHERE text = ?");
    SqliteResetGuard guard(q);
    q.bindText(1, text);
    if (q.step()) id = q.columnInt(0);
  }
  if (id == 0) {
    SqliteStatement& s = db->cached("INSERT INTO strings(text) VALUES (?)");
    SqliteResetGuard guard(s);
    s.bindText(1, text);
    s.run();
    id = db->lastInsertId();
    interned_in_transaction.push_back(key);
  }
  string_texts.emplace(id, key);
  string_ids.emplace(std::move(key), id);
  return id;
}

const std::string& StoreState::stringText(int64_t id) {
  if (auto it = string_texts.find(id); it != string_texts.end()) return it->second;
  SqliteStatement& q = db->cached("SELECT text FROM strings WHERE id = ?");
  SqliteResetGuard guard(q);
  q.bindInt(1, id);
  if (!q.step()) corrupt(path, "an event names string " + std::to_string(id) + ", which does not exist");
  std::string text = q.columnText(0);
  string_ids.emplace(text, id);
  return string_texts.emplace(id, std::move(text)).first->second;
}

namespace {

constexpr int kEventColumns = 14;
// Rows per multi-row INSERT: fewer statement executions, 896 parameters (SQLite allows 32766).
constexpr int kEventsPerInsert = 64;

std::string insertEventsSql(int rows) {
  std::string sql =
      "INSERT INTO events(run_id, seq, kind, source, memory, start_ns, end_ns, name_id, stream, device, bytes,"
      " address, correlation, kernel) VALUES ";
  for (int r = 0; r < rows; ++r) sql += r ? ",(?,?,?,?,?,?,?,?,?,?,?,?,?,?)" : "(?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
  return sql;
}

}  // namespace

void StoreState::insertEvents(int64_t run_id, const std::vector<TraceEvent>& events) {
  static const std::string many_sql = insertEventsSql(kEventsPerInsert);
  static const std::string one_sql = insertEventsSql(1);
  SqliteStatement& many = db->cached(many_sql);
  SqliteStatement& one = db->cached(one_sql);
  SqliteResetGuard many_guard(many), one_guard(one);
  unsigned char blob[kKernelBlobMax];
  size_t n = events.size();
  size_t i = 0;
  while (i < n) {
    bool batch = n - i >= static_cast<size_t>(kEventsPerInsert);
    SqliteStatement& s = batch ? many : one;
    int rows = batch ? kEventsPerInsert : 1;
    for (int r = 0; r < rows; ++r, ++i) {
      const TraceEvent& e = events[i];
      int p = r * kEventColumns;
      s.bindInt(p + 1, run_id);
      s.bindInt(p + 2, static_cast<int64_t>(i));
      s.bindInt(p + 3, static_cast<int64_t>(e.kind));
      s.bindInt(p + 4, static_cast<int64_t>(e.source));
      s.bindInt(p + 5, static_cast<int64_t>(e.memory));
      s.bindInt(p + 6, e.start_ns);
      s.bindInt(p + 7, e.end_ns);
      // internString runs other statements; `s` keeps its bindings meanwhile.
      if (e.name.empty()) s.bindNull(p + 8);
      else s.bindInt(p + 8, internString(e.name));
      s.bindInt(p + 9, e.stream);
      s.bindInt(p + 10, e.device);
      s.bindInt(p + 11, e.bytes);
      s.bindInt(p + 12, static_cast<int64_t>(e.address));
      s.bindInt(p + 13, static_cast<int64_t>(e.correlation));
      if (isZero(e.kernel)) s.bindNull(p + 14);
      else s.bindBlob(p + 14, blob, packKernel(e.kernel, blob));
    }
    s.run();
    s.resetKeepingBindings();  // every parameter is bound again before the next run
  }
}

std::vector<TraceEvent> StoreState::readEvents(int64_t run_id) {
  std::vector<TraceEvent> out;
  {
    SqliteStatement& n = db->cached("SELECT event_count FROM runs WHERE id = ?");
    SqliteResetGuard guard(n);
    n.bindInt(1, run_id);
    // event_count is a hint from a row the file may have damaged: a negative or absurd count
    // must not throw or allocate; the rows themselves decide how many events there are.
    constexpr int64_t kReserveLimit = int64_t{1} << 20;
    if (n.step()) {
      int64_t count = n.columnInt(0);
      if (count > 0) out.reserve(static_cast<size_t>(std::min(count, kReserveLimit)));
    }
  }
  SqliteStatement& q = db->cached(
      "SELECT kind, source, memory, start_ns, end_ns, name_id, stream, device, bytes, address, correlation, kernel"
      " FROM events WHERE run_id = ? ORDER BY seq");
  SqliteResetGuard guard(q);
  q.bindInt(1, run_id);
  while (q.step()) {
    TraceEvent& e = out.emplace_back();
    int64_t kind = q.columnInt(0), source = q.columnInt(1), memory = q.columnInt(2);
    if (kind < 0 || kind > kMaxEventKind || source < 0 || source > kMaxEventSource || memory < 0 ||
        memory > kMaxMemoryKind)
      corrupt(path, "run " + std::to_string(run_id) + " has an event of unknown kind, source or memory");
    e.kind = static_cast<EventKind>(kind);
    e.source = static_cast<EventSource>(source);
    e.memory = static_cast<MemoryKind>(memory);
    e.start_ns = q.columnInt(3);
    e.end_ns = q.columnInt(4);
    if (!q.isNull(5)) e.name = stringText(q.columnInt(5));
    e.stream = static_cast<uint32_t>(q.columnInt(6));
    e.device = static_cast<uint32_t>(q.columnInt(7));
    e.bytes = q.columnInt(8);
    e.address = static_cast<uint64_t>(q.columnInt(9));
    e.correlation = static_cast<uint64_t>(q.columnInt(10));
    if (!q.isNull(11) && !unpackKernel(q.columnBlob(11), e.kernel))
      corrupt(path, "run " + std::to_string(run_id) + " has an event with malformed kernel facts");
  }
  return out;
}

int64_t Store::saveRun(int64_t sweep_id, const RunResult& run) {
  std::lock_guard lock(impl_->mutex);
  impl_->writer();
  StoreTransaction txn(*impl_);
  const int64_t run_id = impl_->insertRun(sweep_id, run);
  txn.commit();
  return run_id;
}

int64_t StoreState::insertRun(int64_t sweep_id, const RunResult& run) {
  // Nothing is written that the readers would refuse as damaged.
  if (auto errors = validate(run.spec); !errors.empty())
    throw StoreError(StoreError::Kind::invalid, "cannot save a run of an impossible workload (" + errors.front().message + ")");
  SqliteConnection& db = *this->db;
  int64_t environment_id = run.environment_id;
  {
    SqliteStatement& q = db.cached("SELECT environment_id FROM sweeps WHERE id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, sweep_id);
    if (!q.step()) throw StoreError(StoreError::Kind::invalid, path + ": no sweep " + std::to_string(sweep_id));
    if (environment_id == 0 && !q.isNull(0)) environment_id = q.columnInt(0);
  }
  if (!run.uuid.empty() && !isUuid(run.uuid))
    throw StoreError(StoreError::Kind::invalid, "cannot save a run whose uuid '" + run.uuid + "' is not a UUID");
  int64_t run_id = 0;
  {
    static const std::string sql = insertRunSql();
    SqliteStatement& s = db.cached(sql);
    SqliteResetGuard guard(s);
    bindRun(s, sweep_id, run);
    // A run without its identity gets one here: a new UUID, and its sweep's environment.
    const int first_identity = 1 + runColumnCount() - 2;
    s.bindText(first_identity, run.uuid.empty() ? newUuid() : run.uuid);
    if (environment_id > 0) s.bindInt(first_identity + 2, environment_id);
    s.run();
    run_id = db.lastInsertId();
  }
  insertEvents(run_id, run.trace.events);
  return run_id;
}

void StoreState::runRowProblems(std::vector<std::string>& out) {
  std::vector<int64_t> readable;
  {
    SqliteStatement q = db->prepare(selectRunSql(version) + " ORDER BY id");
    while (q.step()) {
      try {
        readable.push_back(readRun(q, path).id);
      } catch (const StoreError& e) {
        out.push_back("R" + std::to_string(q.columnInt(0)) + ": " + unreadableRun(q, e).message);
      }
    }
  }
  for (int64_t id : readable) {
    try {
      (void)readEvents(id);
    } catch (const StoreError& e) {
      if (e.kind() != StoreError::Kind::corrupt) throw;
      out.push_back("R" + std::to_string(id) + ": its trace cannot be read: " + e.what());
    }
  }
}

std::vector<RunResult> Store::runs(int64_t sweep_id) {
  std::lock_guard lock(impl_->mutex);
  std::vector<RunResult> out;
  if (!impl_->db) return out;
  {
    SqliteStatement& q = impl_->db->cached(selectRunSql(impl_->version) + " WHERE sweep_id = ? ORDER BY id");
    SqliteResetGuard guard(q);
    q.bindInt(1, sweep_id);
    while (q.step()) {
      try {
        out.push_back(readRun(q, impl_->path));
      } catch (const StoreError& e) {
        out.push_back(unreadableRun(q, e));
      }
    }
  }
  impl_->verifySnapshot();
  return out;
}

std::optional<RunResult> Store::run(int64_t run_id, bool with_events) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) return std::nullopt;
  std::optional<RunResult> r;
  {
    SqliteStatement& q = impl_->db->cached(selectRunSql(impl_->version) + " WHERE id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, run_id);
    if (!q.step()) return std::nullopt;
    r = readRun(q, impl_->path);
  }
  // One read transaction would make row and events a consistent snapshot; runs are written in
  // one transaction and never updated, so two reads see the same run.
  if (with_events) r->trace.events = impl_->readEvents(run_id);
  impl_->verifySnapshot();
  return r;
}

std::optional<int64_t> Store::sweepOfRun(int64_t run_id) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) return std::nullopt;
  std::optional<int64_t> out;
  {
    SqliteStatement& q = impl_->db->cached("SELECT sweep_id FROM runs WHERE id = ?");
    SqliteResetGuard guard(q);
    q.bindInt(1, run_id);
    if (q.step()) out = q.columnInt(0);
  }
  impl_->verifySnapshot();
  return out;
}

std::vector<TraceEvent> Store::events(int64_t run_id) {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) return {};
  auto out = impl_->readEvents(run_id);
  impl_->verifySnapshot();
  return out;
}

}  // namespace attnscope
