#pragma once
// A prepared SQLite statement with RAII finalisation and checked binds and steps. Errors become
// StoreError naming the database file, so callers never see raw SQLite result codes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace attnscope {

class SqliteStatement {
 public:
  SqliteStatement() = default;
  // `path` names the database in error messages; it must outlive the statement.
  SqliteStatement(sqlite3* db, std::string_view sql, const std::string* path);
  ~SqliteStatement();
  SqliteStatement(SqliteStatement&& other) noexcept;
  SqliteStatement& operator=(SqliteStatement&& other) noexcept;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;

  // Parameters are 1-based, as in SQLite.
  void bindInt(int index, int64_t value);
  // NaN is stored as NULL by SQLite; columnDouble reads NULL back as NaN.
  void bindDouble(int index, double value);
  void bindText(int index, std::string_view value);
  void bindBlob(int index, const void* data, size_t size);
  void bindNull(int index);

  // True while a row is available; false when done. Throws StoreError on failure.
  bool step();
  // Runs a statement that returns no rows (or ignores them).
  void run();
  // Makes the statement reusable and clears its bindings (ends its read transaction).
  void reset() noexcept;
  // Makes the statement reusable but keeps its bindings, for loops that rebind every parameter.
  void resetKeepingBindings() noexcept;

  // Columns are 0-based.
  enum class Type { integer, real, text, blob, null };
  Type columnType(int column) const;
  std::string columnName(int column) const;
  bool isNull(int column) const;
  int64_t columnInt(int column) const;
  double columnDouble(int column) const;  // NULL reads as NaN
  std::string columnText(int column) const;
  std::string_view columnTextView(int column) const;  // valid until the next step or reset
  std::string_view columnBlob(int column) const;      // valid until the next step or reset

 private:
  [[noreturn]] void fail(int rc, std::string_view what) const;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  const std::string* path_ = nullptr;
};

// The first 60 characters of `sql` on one line, for error messages.
std::string sqlExcerpt(std::string_view sql);

// Throws the StoreError for a failed SQLite call: the file, what was being done, SQLite's message.
// Corruption maps to StoreError::Kind::corrupt, constraint violations to invalid, the rest to io.
[[noreturn]] void throwSqliteError(sqlite3* db, int rc, const std::string& path, std::string_view what);

// Resets a (cached) statement when the scope ends, so that an early return or an exception never
// leaves it holding a read transaction open.
class SqliteResetGuard {
 public:
  explicit SqliteResetGuard(SqliteStatement& s) : s_(s) {}
  ~SqliteResetGuard() { s_.reset(); }
  SqliteResetGuard(const SqliteResetGuard&) = delete;
  SqliteResetGuard& operator=(const SqliteResetGuard&) = delete;

 private:
  SqliteStatement& s_;
};

}  // namespace attnscope
