#include "core/store/store_schema.h"

#include <sqlite3.h>

#include <cstdio>
#include <set>

#include "core/spec/spec_fields.h"
#include "core/store/sqlite_connection.h"
#include "core/store/store.h"

namespace attnscope::store_schema {
namespace {

// Version 1. Enumerations in events (kind, source, memory) are stored as the integer values
// pinned by the static_asserts at the top of store_runs.cpp; names as ids into `strings`, which are never deleted so that ids
// cached by other connections stay valid.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE strings (
  id   INTEGER PRIMARY KEY,
  text TEXT NOT NULL UNIQUE
);
CREATE TABLE environments (
  id           INTEGER PRIMARY KEY,
  host         TEXT NOT NULL,
  os           TEXT NOT NULL,
  cpu          TEXT NOT NULL,
  gpu          TEXT NOT NULL,
  app_version  TEXT NOT NULL,
  git_revision TEXT NOT NULL,
  json         TEXT NOT NULL UNIQUE
);
CREATE TABLE sweeps (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  state           TEXT NOT NULL,
  spec            TEXT NOT NULL,
  notes           TEXT NOT NULL DEFAULT '',
  tags            TEXT NOT NULL DEFAULT '[]',
  environment_id  INTEGER REFERENCES environments(id)
);
CREATE TABLE runs (
  id              INTEGER PRIMARY KEY,
  sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  backend         TEXT NOT NULL,
  device          TEXT NOT NULL,
  status          TEXT NOT NULL,
  message         TEXT NOT NULL,
  batch           INTEGER NOT NULL,
  heads           INTEGER NOT NULL,
  kv_heads        INTEGER NOT NULL,
  seq_q           INTEGER NOT NULL,
  seq_kv          INTEGER NOT NULL,
  head_dim        INTEGER NOT NULL,
  width           INTEGER NOT NULL,
  dtype           TEXT NOT NULL,
  mask            TEXT NOT NULL,
  mask_width      INTEGER NOT NULL,
  mask_keep_prob  REAL,
  mask_layout     TEXT NOT NULL,
  scale           REAL,
  seed            INTEGER NOT NULL,
  warmup          INTEGER NOT NULL,
  reps            INTEGER NOT NULL,
  median_s        REAL,
  min_s           REAL,
  max_s           REAL,
  samples         TEXT NOT NULL,
  flops           REAL,
  predicted_peak  INTEGER NOT NULL,
  measured_peak   INTEGER NOT NULL,
  cupti_peak      INTEGER NOT NULL,
  io_bytes        INTEGER NOT NULL,
  available       INTEGER NOT NULL,
  acc_checked     INTEGER NOT NULL,
  max_abs_error   REAL,
  rel_l2_error    REAL,
  rows_checked    INTEGER NOT NULL,
  rows_total      INTEGER NOT NULL,
  tolerance       REAL,
  plan            TEXT NOT NULL,
  capture_note    TEXT NOT NULL,
  dropped_records INTEGER NOT NULL,
  event_count     INTEGER NOT NULL,
  started_unix_ms INTEGER NOT NULL,
  wall_s          REAL
);
CREATE INDEX runs_by_sweep ON runs(sweep_id);
CREATE TABLE events (
  run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  seq         INTEGER NOT NULL,
  kind        INTEGER NOT NULL,
  source      INTEGER NOT NULL,
  memory      INTEGER NOT NULL,
  start_ns    INTEGER NOT NULL,
  end_ns      INTEGER NOT NULL,
  name_id     INTEGER,
  stream      INTEGER NOT NULL,
  device      INTEGER NOT NULL,
  bytes       INTEGER NOT NULL,
  address     INTEGER NOT NULL,
  correlation INTEGER NOT NULL,
  kernel      BLOB,
  PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE INDEX events_by_time ON events(run_id, start_ns);
)sql";

std::string hex32(int64_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", static_cast<unsigned>(static_cast<uint32_t>(v)));
  return buf;
}

const std::string kUntouched = "; it was not modified";

// Version 2: the process that owns each sweep, so that a sweep whose process is gone (killed,
// crashed, out of disk) is reported as interrupted instead of running forever. Sweeps a version-1
// build left running are marked interrupted: no owner can be checked for them, and an old build
// still running one sets its final state when it ends.
constexpr const char* kSchemaV2 = R"sql(
CREATE TABLE sweep_owners (
  sweep_id    INTEGER PRIMARY KEY REFERENCES sweeps(id) ON DELETE CASCADE,
  host        TEXT NOT NULL,
  boot_id     TEXT NOT NULL,
  pid         INTEGER NOT NULL,
  start_ticks INTEGER NOT NULL
);
UPDATE sweeps SET state = 'interrupted' WHERE state = 'running';
)sql";

// Version 4: recordings of the user's own programs (`attnscope record`): one row per recording,
// one per call signature with the recorder's JSON object of it.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE recordings (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL,
  created_unix_ms INTEGER NOT NULL,
  ended_unix_ms   INTEGER NOT NULL,
  program         TEXT NOT NULL,
  cwd             TEXT NOT NULL,
  exit_status     INTEGER,
  exit_signal     INTEGER NOT NULL,
  interrupted     INTEGER NOT NULL,
  complete        INTEGER NOT NULL,
  stderr_tail     TEXT NOT NULL,
  note            TEXT NOT NULL,
  torch           TEXT NOT NULL,
  calls_seen      INTEGER NOT NULL,
  calls_dropped   INTEGER NOT NULL,
  overhead_s      REAL,
  environment_id  INTEGER REFERENCES environments(id)
);
CREATE TABLE recording_calls (
  recording_id INTEGER NOT NULL REFERENCES recordings(id) ON DELETE CASCADE,
  row          INTEGER NOT NULL,
  site         TEXT NOT NULL,
  module       TEXT NOT NULL,
  count        INTEGER NOT NULL,
  call         TEXT NOT NULL,
  PRIMARY KEY (recording_id, row)
) WITHOUT ROWID;
)sql";

// A version 4 UUID from SQLite's own randomness, for rows saved before schema 6.
#define ATTNSCOPE_SQL_UUID                                                                          \
  "lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4' ||"                        \
  " substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + abs(random() % 4), 1) ||"     \
  " substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6)))"

// Version 6: identities that hold across databases, so that the shards of one sweep (run on many
// machines, `sweep --shard K/N`) recombine exactly and `attnscope merge` is idempotent. Sweeps,
// runs and recordings get a UUID (existing rows a fresh one); a run gets its global point index in
// its sweep's grid (NULL before: unknown) and the environment that ran it (before: its sweep's);
// a sweep gets its cluster submission (JSON, '' for a local sweep) and slurm_tasks the array
// tasks of a submitted one.
constexpr const char* kSchemaV6 =
    "ALTER TABLE sweeps ADD COLUMN uuid TEXT;"
    "UPDATE sweeps SET uuid = " ATTNSCOPE_SQL_UUID ";"
    "CREATE UNIQUE INDEX sweeps_by_uuid ON sweeps(uuid);"
    "ALTER TABLE sweeps ADD COLUMN cluster TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE runs ADD COLUMN uuid TEXT;"
    "ALTER TABLE runs ADD COLUMN point_index INTEGER;"
    "ALTER TABLE runs ADD COLUMN environment_id INTEGER REFERENCES environments(id);"
    "UPDATE runs SET uuid = " ATTNSCOPE_SQL_UUID
    ", environment_id = (SELECT s.environment_id FROM sweeps s WHERE s.id = runs.sweep_id);"
    "CREATE UNIQUE INDEX runs_by_uuid ON runs(uuid);"
    "CREATE INDEX runs_by_point ON runs(sweep_id, point_index);"
    "ALTER TABLE recordings ADD COLUMN uuid TEXT;"
    "UPDATE recordings SET uuid = " ATTNSCOPE_SQL_UUID ";"
    "CREATE UNIQUE INDEX recordings_by_uuid ON recordings(uuid);"
    "CREATE TABLE slurm_tasks ("
    "  sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,"
    "  job_id   TEXT NOT NULL,"
    "  task     INTEGER NOT NULL,"
    "  points   TEXT NOT NULL,"
    "  shard    TEXT NOT NULL,"
    "  state    TEXT NOT NULL DEFAULT 'PENDING',"
    "  elapsed  TEXT NOT NULL DEFAULT '',"
    "  merged   INTEGER NOT NULL DEFAULT 0,"
    "  PRIMARY KEY (job_id, task)"
    ") WITHOUT ROWID;"
    "CREATE INDEX slurm_tasks_by_sweep ON slurm_tasks(sweep_id);";
#undef ATTNSCOPE_SQL_UUID

std::vector<const char*> requiredTables(int version) {
  std::vector<const char*> t = {"strings", "environments", "sweeps", "runs", "events"};
  if (version >= 2) t.push_back("sweep_owners");
  if (version >= 4) {
    t.push_back("recordings");
    t.push_back("recording_calls");
  }
  if (version >= 6) t.push_back("slurm_tasks");
  return t;
}

}  // namespace

Migration addSpecColumns(int version) {
  std::string names;
  for (const SpecField& f : specFields())
    for (const StoreColumn& c : f.columns)
      if (c.since_schema == version) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return {version - 1, "add the workload columns " + names, [version](SqliteConnection& db) {
            for (const SpecField& f : specFields())
              for (const StoreColumn& c : f.columns)
                if (c.since_schema == version)
                  db.exec("ALTER TABLE runs ADD COLUMN " + std::string(c.name) + " " + std::string(c.sql) + " DEFAULT " +
                          std::string(c.sql_default));
          }};
}

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {
      {0, "create the version 1 schema", [](SqliteConnection& db) { db.exec(kSchemaV1); }},
      {1, "record the process that owns each sweep", [](SqliteConnection& db) { db.exec(kSchemaV2); }},
      addSpecColumns(3),  // kind, pass, checkpoint
      {3, "add recordings of programs' attention calls", [](SqliteConnection& db) { db.exec(kSchemaV4); }},
      addSpecColumns(5),  // mask_dtype
      {5, "identities across databases (UUIDs, point indexes, per-run environments) and Slurm tasks",
       [](SqliteConnection& db) { db.exec(kSchemaV6); }},
      addSpecColumns(7),  // layers, tp, tp_comm
  };
  return steps;
}

void migrate(SqliteConnection& db, const std::vector<Migration>& steps, int target_version) {
  // Up to date (the usual case): no write lock, so opening never waits for another process's
  // saveRun to finish.
  if (db.pragmaInt("user_version") == target_version) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Read inside the write transaction: another process may have migrated meanwhile.
    int version = static_cast<int>(db.pragmaInt("user_version"));
    if (version > target_version)
      throw StoreError(StoreError::Kind::newer_schema,
                       db.path() + " was written by a newer AttnScope (schema " + std::to_string(version) +
                           "; this build reads up to " + std::to_string(target_version) + ")" + kUntouched);
    if (version < target_version) {
      while (version < target_version) {
        const Migration* step = nullptr;
        for (const auto& m : steps)
          if (m.from_version == version) step = &m;
        if (!step)
          throw StoreError(StoreError::Kind::invalid, db.path() + ": no migration from schema " +
                                                          std::to_string(version) + " to " +
                                                          std::to_string(version + 1));
        step->apply(db);
        ++version;
      }
      db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
      db.exec("PRAGMA user_version = " + std::to_string(target_version));
    }
    db.exec("COMMIT");
  } catch (...) {
    if (!sqlite3_get_autocommit(db.handle())) sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

Inspection inspect(SqliteConnection& db, int max_version) {
  const std::string& path = db.path();
  // The first statement reads the header: a text file or an image fails here with SQLITE_NOTADB.
  // Nothing below writes, so a refused file keeps every byte.
  int64_t app_id = 0;
  {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db.handle(), "PRAGMA application_id", -1, &stmt, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) app_id = sqlite3_column_int64(stmt, 0);
    std::string detail = sqlite3_errmsg(db.handle());
    sqlite3_finalize(stmt);
    if ((rc & 0xff) == SQLITE_NOTADB)
      throw StoreError(StoreError::Kind::not_attnscope,
                       path + " is not an AttnScope database (it is not an SQLite file)" + kUntouched);
    if (rc != SQLITE_ROW) {
      try {
        throwSqliteError(db.handle(), rc, path, "reading the header");
      } catch (const StoreError& e) {
        if (e.kind() != StoreError::Kind::corrupt) throw;
        throw StoreError(StoreError::Kind::corrupt, e.what() + kUntouched);
      }
    }
  }
  try {
    Inspection result;
    result.version = static_cast<int>(db.pragmaInt("user_version"));
    std::set<std::string> tables;
    {
      SqliteStatement s = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      while (s.step()) tables.insert(s.columnText(0));
    }
    std::string listed;
    int shown = 0;
    for (const auto& t : tables) {
      if (shown++ == 6) {
        listed += ", ...";
        break;
      }
      listed += (listed.empty() ? "" : ", ") + t;
    }
    if (app_id != kApplicationId) {
      if (app_id == 0 && result.version == 0 && tables.empty()) {
        result.empty_schema = true;
        return result;
      }
      throw StoreError(StoreError::Kind::not_attnscope,
                       path + " is not an AttnScope database (an SQLite file with application_id " + hex32(app_id) +
                           (listed.empty() ? std::string() : " and tables " + listed) + ")" + kUntouched);
    }
    if (result.version > max_version)
      throw StoreError(StoreError::Kind::newer_schema,
                       path + " was written by a newer AttnScope (schema " + std::to_string(result.version) +
                           "; this build reads up to " + std::to_string(max_version) + ")" + kUntouched);
    if (result.version <= 0)
      throw StoreError(StoreError::Kind::corrupt,
                       path + " has AttnScope's application id but schema version " + std::to_string(result.version) +
                           (listed.empty() ? std::string(" and no tables") : " with tables " + listed) +
                           " (an interrupted creation or an edit by hand)" + kUntouched);
    for (const char* t : requiredTables(result.version))
      if (!tables.count(t))
        throw StoreError(StoreError::Kind::corrupt, path + " is damaged (schema " + std::to_string(result.version) +
                                                        " but no table '" + t + "')" + kUntouched);
    return result;
  } catch (const StoreError& e) {
    if (e.kind() != StoreError::Kind::corrupt || std::string_view(e.what()).ends_with(kUntouched)) throw;
    throw StoreError(StoreError::Kind::corrupt, std::string(e.what()) + kUntouched);
  }
}

namespace {

void checkPages(SqliteConnection& db, bool full, std::vector<std::string>& problems) {
  {
    SqliteStatement check = db.prepare(full ? "PRAGMA integrity_check(20)" : "PRAGMA quick_check(20)");
    while (check.step()) {
      std::string line = check.columnText(0);
      if (line != "ok") problems.push_back(line);
    }
  }
  if (full) {
    SqliteStatement fk = db.prepare("PRAGMA foreign_key_check");
    int64_t rows = 0;
    std::string first;
    while (fk.step()) {
      if (rows++ == 0) first = fk.columnText(0) + " row " + std::to_string(fk.columnInt(1)) + " names a missing " + fk.columnText(2) + " row";
    }
    if (rows) problems.push_back(std::to_string(rows) + " rows refer to missing rows (first: " + first + ")");
  }
}

}  // namespace

std::vector<std::string> integrityProblems(SqliteConnection& db, bool full) {
  std::vector<std::string> problems;
  try {
    checkPages(db, full, problems);
  } catch (const StoreError& e) {
    // Damage bad enough that the check itself stops (a truncated file, a page that is not a page).
    if (e.kind() != StoreError::Kind::corrupt) throw;
    problems.push_back(e.what());
  }
  return problems;
}


}  // namespace attnscope::store_schema
