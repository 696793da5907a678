#pragma once
// The store's on-disk format: the application id that marks AttnScope files, the forward
// migrations that build and upgrade the schema, and the read-only inspection that decides whether
// an existing file may be opened at all. Internal to the store (and its tests).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnscope {

class SqliteConnection;

namespace store_schema {

// PRAGMA application_id of every AttnScope database: "AtSc".
inline constexpr int32_t kApplicationId = 0x41745363;

// One forward step from `from_version` to `from_version + 1`.
struct Migration {
  int from_version = 0;
  std::string description;
  std::function<void(SqliteConnection&)> apply;
};

// The steps of this build: migrations()[i] goes from version i to i + 1, up to
// Store::kSchemaVersion. A new schema version appends a step; existing steps never change.
const std::vector<Migration>& migrations();

// The step from `version` - 1 to `version` that adds the field table's store columns of that
// version (core/spec/spec_fields.h, StoreColumn::since_schema) to `runs`, each with its default, so
// rows saved before read as the default.
Migration addSpecColumns(int version);

// Brings the database to `target_version` with `steps`, all in one IMMEDIATE transaction: either
// every step and the new user_version are committed, or nothing is. Throws StoreError (newer_schema
// when the file is already past target; invalid when a step is missing).
void migrate(SqliteConnection& db, const std::vector<Migration>& steps, int target_version);

// What a read-only look at an existing, non-empty file found.
struct Inspection {
  bool empty_schema = false;  // a valid SQLite file with no tables and no ids: adopted as new
  int version = 0;            // its user_version
};

// Reads the header, application id, schema version and table list through `db` (a connection
// on which nothing has been written yet) and throws StoreError when the file must be refused: not
// an SQLite file, another application's database, a schema newer than `max_version`, AttnScope's
// id with version 0, or a table of its version missing. Cheap: it reads the first pages only.
Inspection inspect(SqliteConnection& db, int max_version);

// PRAGMA quick_check (full = false) or integrity_check plus foreign_key_check (full = true): the
// problems found, empty when sound. Reads every page.
std::vector<std::string> integrityProblems(SqliteConnection& db, bool full);

}  // namespace store_schema
}  // namespace attnscope
