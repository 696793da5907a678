#pragma once
// One SQLite connection with a cache of prepared statements. Used only by the store.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/store/sqlite_statement.h"

struct sqlite3;

namespace attnscope {

class SqliteConnection {
 public:
  // `target` is a file name, or a "file:" URI when `flags` include SQLITE_OPEN_URI. `path` is the
  // file name used in error messages.
  SqliteConnection(const std::string& target, int flags, std::string path);
  ~SqliteConnection();
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }

  // Runs one or more statements that return no rows.
  void exec(std::string_view sql);
  // A fresh statement, finalised by its destructor.
  SqliteStatement prepare(std::string_view sql);
  // A statement prepared once per connection and reused; reset it after use (SqliteResetGuard).
  SqliteStatement& cached(std::string_view sql);
  // The integer value of "PRAGMA name" (user_version, application_id, ...).
  int64_t pragmaInt(std::string_view name);
  // Which of the files SQLite holds for this database is no longer the one on disk (see
  // sqlite_file_guard.h); empty when all still are.
  std::optional<std::string> heldFileProblem() const;
  int64_t changes() const;
  int64_t lastInsertId() const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::unordered_map<std::string, std::unique_ptr<SqliteStatement>> cache_;
};

// Turns a file name into a "file:" URI (percent-escaping what URIs reserve) with `query` appended,
// e.g. sqliteFileUri("/a b?.db", "mode=ro&immutable=1").
std::string sqliteFileUri(const std::string& path, std::string_view query);

}  // namespace attnscope
