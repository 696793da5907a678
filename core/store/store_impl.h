#pragma once
// Store internals shared by store.cpp (opening, environments, sweeps) and store_runs.cpp (runs
// and their events). Not part of the public interface.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/store/sqlite_connection.h"
#include "core/store/store.h"

namespace attnscope {

// What stat() says about a file: a snapshot reader compares it before and after reading.
struct FileFingerprint {
  uint64_t device = 0, inode = 0;
  int64_t size = 0, mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileFingerprint&) const = default;
};

struct StoreState {
  std::string path;
  std::unique_ptr<SqliteConnection> db;  // null for an empty file opened for reading
  bool read_only = false;
  int version = 0;  // the file's schema version (a read-only store reads older ones as they are)
  // Set when the file is read as an immutable snapshot (see store_open.cpp): its fingerprint at
  // open, checked after every read so that a change by another process is an error, never a
  // silently torn result.
  std::optional<FileFingerprint> snapshot;
  void verifySnapshot() const;
  // The connection for a write; StoreError read_only for a store opened for reading.
  SqliteConnection& writer();
  // StoreError io when a file SQLite holds for this database (the file, its -wal or -shm) was
  // deleted or replaced on disk since it was opened: a write would then be lost, or worse.
  void requireHeldFilesCurrent() const;
  // One connection is not safe to share between threads mid-statement; every public member
  // function takes this lock, so one Store may be used from several threads.
  std::mutex mutex;

  // Interned names: text -> id and id -> text. Ids interned inside a transaction that rolls
  // back are forgotten again (they no longer exist in the file).
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int64_t, TextHash, std::equal_to<>> string_ids;
  std::unordered_map<int64_t, std::string> string_texts;
  std::vector<std::string> interned_in_transaction;

  int64_t internString(std::string_view text);
  const std::string& stringText(int64_t id);

  // The rows as the readers decode them, one line per row they refuse: sweeps and environments
  // (store.cpp), runs and their events (store_runs.cpp), recordings (store_recordings.cpp). What `check` adds to the page check.
  void sweepRowProblems(std::vector<std::string>& out);
  void runRowProblems(std::vector<std::string>& out);
  void recordingRowProblems(std::vector<std::string>& out);  // store_recordings.cpp

  void insertEvents(int64_t run_id, const std::vector<TraceEvent>& events);
  // The writes themselves, inside the caller's transaction (saveRun, saveEnvironment,
  // saveRecording and merge each open one): the run with its events, an environment (reusing an
  // identical stored one), a recording with its calls. Each returns the new row's id.
  int64_t insertRun(int64_t sweep_id, const RunResult& run);
  int64_t insertEnvironment(const Environment& env);
  int64_t insertRecording(const Recording& rec);  // store_recordings.cpp
  std::vector<TraceEvent> readEvents(int64_t run_id);
};

struct Store::Impl : StoreState {};

// running, finished, cancelled, failed, interrupted, submitted.
bool isSweepState(std::string_view s);

// A JSON library message without its "[json.exception.type_error.302] " prefix.
inline std::string jsonProblem(const std::exception& e) {
  std::string_view text = e.what();
  if (text.starts_with("[json.exception.")) {
    size_t close = text.find("] ");
    if (close != std::string_view::npos) text.remove_prefix(close + 2);
  }
  return std::string(text);
}

// A JSON column; text that does not parse means the file was damaged or edited by hand.
inline nlohmann::json parseJsonColumn(std::string_view text, const std::string& path, std::string_view what) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw StoreError(StoreError::Kind::corrupt, path + ": " + std::string(what) + " is not valid JSON (" + jsonProblem(e) + ")");
  }
}

// BEGIN IMMEDIATE now (taking the write lock up front, so busy_timeout applies here rather than
// at an upgrade deep inside the transaction); ROLLBACK unless commit() was called.
class StoreTransaction {
 public:
  explicit StoreTransaction(StoreState& impl);
  ~StoreTransaction();
  StoreTransaction(const StoreTransaction&) = delete;
  StoreTransaction& operator=(const StoreTransaction&) = delete;
  void commit();

 private:
  StoreState& impl_;
  bool done_ = false;
};

}  // namespace attnscope
