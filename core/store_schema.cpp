#include "core/store_schema.h"

#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/sqlite_connection.h"
#include "core/store.h"

namespace attnscope::store_schema {
namespace {

// Version 1. Enumerations in events (kind, source, memory) are stored as the integer values
// pinned in store_events.cpp; names as ids into `strings`, which are never deleted so that ids
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

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> steps = {
      {0, "create the version 1 schema", [](SqliteConnection& db) { db.exec(kSchemaV1); }},
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

Inspection inspect(const std::string& path, int max_version) {
  // The header first, with plain file I/O: a text file or an image never reaches SQLite.
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw StoreError(StoreError::Kind::io, path + " cannot be read" + kUntouched);
    char header[100] = {};
    in.read(header, sizeof header);
    static const char magic[16] = "SQLite format 3";  // 15 characters and the NUL
    if (in.gcount() < static_cast<std::streamsize>(sizeof header) ||
        std::char_traits<char>::compare(header, magic, sizeof magic) != 0)
      throw StoreError(StoreError::Kind::not_attnscope,
                       path + " is not an AttnScope database (it is not an SQLite file)" + kUntouched);
  }

  // A read-only connection still creates -wal and -shm files next to a WAL database, so without
  // them the file is opened immutable (no locks, no side files). When a -wal file exists, its
  // frames are part of the database and must be read: open read-only the normal way (the side
  // files are already there).
  std::error_code ec;
  bool has_wal = std::filesystem::exists(path + "-wal", ec);
  std::string uri = sqliteFileUri(path, has_wal ? "mode=ro" : "mode=ro&immutable=1");
  try {
    SqliteConnection db(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, path);
    Inspection result;
    int64_t app_id = db.pragmaInt("application_id");
    result.version = static_cast<int>(db.pragmaInt("user_version"));
    std::string tables;
    int64_t table_count = 0;
    {
      SqliteStatement s = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
      while (s.step()) {
        if (table_count < 6) tables += (table_count ? ", " : "") + s.columnText(0);
        ++table_count;
      }
      if (table_count > 6) tables += ", ...";
    }
    if (app_id != kApplicationId) {
      if (app_id == 0 && result.version == 0 && table_count == 0) {
        result.empty_schema = true;
        return result;
      }
      throw StoreError(StoreError::Kind::not_attnscope,
                       path + " is not an AttnScope database (an SQLite file with application_id " + hex32(app_id) +
                           (tables.empty() ? std::string() : " and tables " + tables) + ")" + kUntouched);
    }
    if (result.version > max_version)
      throw StoreError(StoreError::Kind::newer_schema,
                       path + " was written by a newer AttnScope (schema " + std::to_string(result.version) +
                           "; this build reads up to " + std::to_string(max_version) + ")" + kUntouched);
    SqliteStatement check = db.prepare("PRAGMA quick_check(5)");
    std::string problems;
    while (check.step()) {
      std::string line = check.columnText(0);
      if (line == "ok") continue;
      problems += (problems.empty() ? "" : "; ") + line;
    }
    if (!problems.empty())
      throw StoreError(StoreError::Kind::corrupt,
                       path + " is damaged (PRAGMA quick_check: " + problems + ")" + kUntouched);
    return result;
  } catch (const StoreError& e) {
    if (e.kind() != StoreError::Kind::corrupt || std::string_view(e.what()).ends_with(kUntouched)) throw;
    throw StoreError(StoreError::Kind::corrupt, std::string(e.what()) + kUntouched);
  }
}

}  // namespace attnscope::store_schema
