#include "core/store/sqlite_connection.h"

#include <sqlite3.h>

#include <cstdio>

#include "core/store/sqlite_file_guard.h"

namespace attnscope {

SqliteConnection::SqliteConnection(const std::string& target, int flags, std::string path) : path_(std::move(path)) {
  installSqliteFileGuard();
  int rc = sqlite3_open_v2(target.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close_v2(db_);
    db_ = nullptr;
    throwSqliteError(nullptr, rc, path_, "opening (" + detail + ")");
  }
  sqlite3_extended_result_codes(db_, 1);
}

SqliteConnection::~SqliteConnection() {
  cache_.clear();  // statements first: close_v2 would otherwise defer the close
  // The last connection to close checkpoints its -wal into the database and deletes the -wal by
  // name. When the -wal it holds is no longer the file on disk, that would write stale pages over
  // the database and delete another process's live journal: close without a checkpoint instead.
  if (db_ && heldFileProblem()) sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_close_v2(db_);
}

void SqliteConnection::exec(std::string_view sql) {
  char* err = nullptr;
  std::string text(sql);
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (err) sqlite3_free(err);
  if (rc != SQLITE_OK) throwSqliteError(db_, rc, path_, "running \"" + sqlExcerpt(text) + "\"");
}

SqliteStatement SqliteConnection::prepare(std::string_view sql) { return SqliteStatement(db_, sql, &path_); }

SqliteStatement& SqliteConnection::cached(std::string_view sql) {
  std::string key(sql);
  auto it = cache_.find(key);
  if (it == cache_.end())
    it = cache_.emplace(std::move(key), std::make_unique<SqliteStatement>(db_, sql, &path_)).first;
  return *it->second;
}

int64_t SqliteConnection::pragmaInt(std::string_view name) {
  SqliteStatement s = prepare("PRAGMA " + std::string(name));
  return s.step() ? s.columnInt(0) : 0;
}

std::optional<std::string> SqliteConnection::heldFileProblem() const {
  const char* file = sqlite3_db_filename(db_, "main");
  if (!file || !*file) return std::nullopt;
  return sqliteHeldFileProblem(file);
}

int64_t SqliteConnection::changes() const { return sqlite3_changes64(db_); }

int64_t SqliteConnection::lastInsertId() const { return sqlite3_last_insert_rowid(db_); }

std::string sqliteFileUri(const std::string& path, std::string_view query) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (c == '%' || c == '?' || c == '#' || c <= 0x20 || c >= 0x7f) {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      uri += buf;
    } else {
      uri += static_cast<char>(c);
    }
  }
  // A relative name must not start with "//" (an authority) after "file:".
  if (uri.compare(0, 7, "file://") == 0) uri.insert(5, "/");
  if (!query.empty()) uri += "?" + std::string(query);
  return uri;
}

}  // namespace attnscope
