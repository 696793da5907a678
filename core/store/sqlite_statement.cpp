#include "core/store/sqlite_statement.h"

#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/store/store_error.h"

namespace attnscope {

std::string sqlExcerpt(std::string_view sql) {
  // Messages are one line: schema SQL spans many, and a multi-line error reads as several errors.
  std::string out;
  for (char c : sql) {
    bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
    if (out.size() >= 60) return out + "...";
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

StoreError::Kind storeErrorKindOf(int err) {
  return err == ENOSPC || err == EFBIG || err == EDQUOT ? StoreError::Kind::full : StoreError::Kind::io;
}

namespace {

// errno of the failed call behind an I/O error. sqlite3_system_errno() reads errno when the error
// surfaces, after the rollback's own calls may have changed it; the database file and its journal
// (the WAL) each keep the errno of their own last failure.
int ioErrno(sqlite3* db) {
  int err = sqlite3_system_errno(db);
  if (storeErrorKindOf(err) == StoreError::Kind::full) return err;
  int main = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_LAST_ERRNO, &main) == SQLITE_OK &&
      storeErrorKindOf(main) == StoreError::Kind::full)
    return main;
  sqlite3_file* journal = nullptr;
  int journal_err = 0;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &journal) == SQLITE_OK && journal &&
      journal->pMethods && journal->pMethods->xFileControl(journal, SQLITE_FCNTL_LAST_ERRNO, &journal_err) == SQLITE_OK &&
      storeErrorKindOf(journal_err) == StoreError::Kind::full)
    return journal_err;
  return err;
}

}  // namespace

void throwSqliteError(sqlite3* db, int rc, const std::string& path, std::string_view what) {
  std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  StoreError::Kind kind = StoreError::Kind::io;
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: kind = StoreError::Kind::corrupt; break;
    case SQLITE_CONSTRAINT: kind = StoreError::Kind::invalid; break;
    case SQLITE_CANTOPEN: kind = StoreError::Kind::not_found; break;
    case SQLITE_FULL: kind = StoreError::Kind::full; break;
    case SQLITE_READONLY: kind = StoreError::Kind::read_only; break;
    default: break;
  }
  // SQLite says "disk I/O error" when the file size limit (ulimit -f) or a quota stops a write,
  // and "unable to open database file" when the process has no descriptor left: errno says which.
  const bool io = (rc & 0xff) == SQLITE_IOERR || (rc & 0xff) == SQLITE_CANTOPEN;
  if (const int err = io && db ? ioErrno(db) : 0; err != 0) {
    if (storeErrorKindOf(err) == StoreError::Kind::full) {
      kind = StoreError::Kind::full;
      detail = "database or disk is full (" + std::string(std::strerror(err)) +
               (err == EFBIG ? ": the file size limit, ulimit -f, is reached)" : ")");
    } else if (err == EMFILE || err == ENFILE) {
      kind = StoreError::Kind::io;
      detail += " (" + std::string(std::strerror(err)) + ")";
    }
  }
  std::string message = path + ": " + std::string(what) + " failed: " + detail;
  if (kind == StoreError::Kind::corrupt) message += " (the database file is damaged)";
  throw StoreError(kind, message);
}

SqliteStatement::SqliteStatement(sqlite3* db, std::string_view sql, const std::string* path)
    : db_(db), path_(path) {
  int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, &stmt_,
                              nullptr);
  if (rc != SQLITE_OK) fail(rc, "preparing \"" + sqlExcerpt(sql) + "\"");
}

SqliteStatement::~SqliteStatement() { sqlite3_finalize(stmt_); }

SqliteStatement::SqliteStatement(SqliteStatement&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      stmt_(std::exchange(other.stmt_, nullptr)),
      path_(std::exchange(other.path_, nullptr)) {}

SqliteStatement& SqliteStatement::operator=(SqliteStatement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    db_ = std::exchange(other.db_, nullptr);
    stmt_ = std::exchange(other.stmt_, nullptr);
    path_ = std::exchange(other.path_, nullptr);
  }
  return *this;
}

void SqliteStatement::fail(int rc, std::string_view what) const {
  static const std::string unknown = "database";
  throwSqliteError(db_, rc, path_ ? *path_ : unknown, what);
}

void SqliteStatement::bindInt(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc, "binding an integer");
}

void SqliteStatement::bindDouble(int index, double value) {
  int rc = std::isnan(value) ? sqlite3_bind_null(stmt_, index) : sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc, "binding a number");
}

void SqliteStatement::bindText(int index, std::string_view value) {
  // SQLITE_TRANSIENT: callers pass temporaries; SQLite copies.
  int rc = sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  if (rc != SQLITE_OK) fail(rc, "binding text");
}

void SqliteStatement::bindBlob(int index, const void* data, size_t size) {
  int rc = sqlite3_bind_blob64(stmt_, index, data, size, SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(rc, "binding a blob");
}

void SqliteStatement::bindNull(int index) {
  int rc = sqlite3_bind_null(stmt_, index);
  if (rc != SQLITE_OK) fail(rc, "binding NULL");
}

bool SqliteStatement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  // The statement's own error code is in rc with extended codes; reset reports it again.
  std::string sql = sqlite3_sql(stmt_) ? sqlite3_sql(stmt_) : "";
  fail(rc, "running \"" + sql.substr(0, 60) + "\"");
}

void SqliteStatement::run() {
  while (step()) {
  }
}

void SqliteStatement::reset() noexcept {
  if (!stmt_) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void SqliteStatement::resetKeepingBindings() noexcept {
  if (stmt_) sqlite3_reset(stmt_);
}

SqliteStatement::Type SqliteStatement::columnType(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER: return Type::integer;
    case SQLITE_FLOAT: return Type::real;
    case SQLITE_TEXT: return Type::text;
    case SQLITE_BLOB: return Type::blob;
    default: return Type::null;
  }
}

std::string SqliteStatement::columnName(int column) const {
  const char* name = sqlite3_column_name(stmt_, column);
  return name ? name : "?";
}

bool SqliteStatement::isNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

int64_t SqliteStatement::columnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double SqliteStatement::columnDouble(int column) const {
  if (isNull(column)) return std::numeric_limits<double>::quiet_NaN();
  return sqlite3_column_double(stmt_, column);
}

std::string SqliteStatement::columnText(int column) const { return std::string(columnTextView(column)); }

std::string_view SqliteStatement::columnTextView(int column) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  if (!p) return {};
  return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::string_view SqliteStatement::columnBlob(int column) const {
  auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
  if (!p) return {};
  return std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

}  // namespace attnscope
