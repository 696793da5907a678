// Opening a store: for writing (checked writable first, a new file created atomically, sweeps of
// dead processes marked interrupted) or for reading (never writes, leaves no side files).
//
// Every look at the database goes through SQLite. POSIX record locks belong to a process and an
// inode, and closing ANY descriptor of the file drops all of them: a header read through a
// std::ifstream while the GUI held a connection made another process believe it was the last
// user, checkpoint and delete the GUI's live -wal and -shm, and the file was destroyed. SQLite
// shares one descriptor per inode between the connections of a process, so connections (this
// process's GUI store, its sweep worker's store, an export) are safe together. Only stat() and
// access() are used on the path besides.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/files/output_file.h"
#include "core/store/store.h"
#include "core/store/store_impl.h"
#include "core/store/store_owner.h"
#include "core/store/store_schema.h"

namespace attnscope {
namespace fs = std::filesystem;

namespace {

constexpr int kBusyTimeoutMs = 5000;

std::optional<FileFingerprint> fingerprint(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileFingerprint{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                         static_cast<int64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec,
                         st.st_ctim.tv_sec * 1'000'000'000LL + st.st_ctim.tv_nsec};
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

int64_t sizeOf(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// Whether this process (its effective ids) may write `path`.
bool writable(const std::string& path) { return ::faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) == 0; }

std::string folderOf(const std::string& path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

struct FileFacts {
  bool exists = false;
  bool empty = false;  // exists with 0 bytes
};

// stat() only: what is at `path`, refusing what can never be a database.
FileFacts examine(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw StoreError(StoreError::Kind::io, path + ": " + ec.message());
  FileFacts f;
  if (!fs::exists(status)) return f;
  if (fs::is_directory(status))
    throw StoreError(StoreError::Kind::invalid, path + " is a folder, not a database file");
  if (!fs::is_regular_file(status))
    throw StoreError(StoreError::Kind::invalid, path + " is not a regular file (a device, FIFO or socket), not a database file");
  f.exists = true;
  f.empty = fs::file_size(path, ec) == 0 && !ec;
  return f;
}

void removeQuietly(const std::string& path) { ::unlink(path.c_str()); }

void configureWriter(SqliteConnection& db) {
  {
    SqliteStatement mode = db.prepare("PRAGMA journal_mode = WAL");
    if (!mode.step() || mode.columnTextView(0) != "wal")
      throw StoreError(StoreError::Kind::read_only, db.path() + ": cannot switch to the WAL journal");
  }
  // FULL: a committed run survives a power loss too, not only a crash of the process; one fsync
  // per finished run is cheap next to running it.
  db.exec("PRAGMA foreign_keys = ON; PRAGMA synchronous = FULL; PRAGMA cache_size = -32768;"
          " PRAGMA journal_size_limit = 67108864");
}

// Builds the schema in a temporary file in the same folder and moves it into place only when it
// is complete, so that a full disk or a crash never leaves a 0-byte or half-made database. When
// another process created the file meanwhile, theirs is kept and opened.
void createAtomically(const std::string& path) {
  std::string tmp;
  int fd = createTemporaryIn(folderOf(path), "new", tmp);
  if (fd < 0) throw StoreError(storeErrorKindOf(errno), "cannot create " + path + ": " + std::strerror(errno));
  ::fchmod(fd, static_cast<mode_t>(newFileMode()));  // what SQLite would have given a file it created
  ::close(fd);  // no connection to this new inode exists yet
  try {
    {
      SqliteConnection db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path);
      sqlite3_busy_timeout(db.handle(), kBusyTimeoutMs);
      configureWriter(db);
      store_schema::migrate(db, store_schema::migrations(), Store::kSchemaVersion);
    }  // closing checkpoints the WAL into the file and removes tmp-wal and tmp-shm
    if (exists(tmp + "-wal"))
      throw StoreError(StoreError::Kind::io, "cannot create " + path + ": the new file's journal was not checkpointed");
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0) {
      int err = errno;
      if (err == EINVAL || err == ENOSYS) {  // a file system without RENAME_NOREPLACE: link() also refuses to replace
        err = ::link(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
        removeQuietly(tmp);
      }
      if (err != 0 && err != EEXIST)
        throw StoreError(storeErrorKindOf(err), "cannot create " + path + ": " + std::strerror(err));
    }
  } catch (const StoreError& e) {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) removeQuietly(tmp + suffix);
    std::string what = e.what();
    if (what.starts_with("cannot create")) throw;
    if (what.starts_with(path + ": ")) what.erase(0, path.size() + 2);  // named once, in front
    throw StoreError(e.kind(), "cannot create " + path + ": " + what);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) removeQuietly(tmp + suffix);
}

void requireWritable(const std::string& path, const FileFacts& facts) {
  const std::string dir = folderOf(path);
  if (facts.exists && !writable(path))
    throw StoreError(StoreError::Kind::read_only,
                     path + " is read-only (" + std::strerror(EACCES) +
                         "); saving needs a writable database (runs, show, compare and export can still read it)");
  // WAL keeps its -wal and -shm files next to the database; they are created by the first user.
  if (!writable(dir) && !(exists(path + "-wal") && exists(path + "-shm")))
    throw StoreError(StoreError::Kind::read_only,
                     "the folder " + dir + " is read-only (" + std::strerror(EACCES) + "); saving to " + path +
                         " needs to create " + fs::path(path).filename().string() + "-wal and -shm there");
}

// Sweeps stored as running whose process is gone: an unclean end of that process. The file gets
// the full quick_check once before anything is written, then the sweeps are marked interrupted.
void recoverAbandonedSweeps(StoreState& s) {
  std::vector<int64_t> abandoned;
  {
    SqliteStatement q = s.db->prepare(
        "SELECT s.id, o.host, o.boot_id, o.pid, o.start_ticks FROM sweeps s JOIN sweep_owners o ON o.sweep_id = s.id"
        " WHERE s.state = 'running'");
    while (q.step()) {
      ProcessIdentity owner{q.columnText(1), q.columnText(2), q.columnInt(3), q.columnInt(4)};
      if (ownerState(owner) == OwnerState::gone) abandoned.push_back(q.columnInt(0));
    }
  }
  if (abandoned.empty()) return;
  auto problems = store_schema::integrityProblems(*s.db, false);
  if (!problems.empty())
    throw StoreError(StoreError::Kind::corrupt, s.path + " is damaged (found after a sweep's process ended uncleanly; "
                                                         "PRAGMA quick_check: " + problems.front() +
                                                         "); it was not modified");
  StoreTransaction txn(s);
  SqliteStatement u = s.db->prepare("UPDATE sweeps SET state = 'interrupted' WHERE id = ? AND state = 'running'");
  for (int64_t id : abandoned) {
    u.bindInt(1, id);
    u.run();
    u.reset();
  }
  txn.commit();
}

void openForWriting(StoreState& s, bool create) {
  const std::string& path = s.path;
  FileFacts facts = examine(path);
  if (!facts.exists || facts.empty) {
    if (!create)
      throw StoreError(StoreError::Kind::not_found,
                       path + (facts.exists ? " is empty (no AttnScope database in it)" : " does not exist"));
  }
  if (!facts.exists) {
    std::string dir = folderOf(path);
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      fs::create_directories(dir, ec);
      if (ec) throw StoreError(StoreError::Kind::io, "cannot create the folder " + dir + ": " + ec.message());
    }
    if (!writable(dir))
      throw StoreError(StoreError::Kind::read_only,
                       "cannot create " + path + ": the folder " + dir + " is read-only (" + std::strerror(EACCES) + ")");
    createAtomically(path);
  }
  requireWritable(path, facts);
  s.db = std::make_unique<SqliteConnection>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path);
  sqlite3_busy_timeout(s.db->handle(), kBusyTimeoutMs);
  // Everything up to here only read: a refused file keeps every byte.
  auto inspection = store_schema::inspect(*s.db, Store::kSchemaVersion);
  if (sqlite3_db_readonly(s.db->handle(), "main") == 1)
    throw StoreError(StoreError::Kind::read_only, path + " can only be opened read-only; saving needs a writable database");
  configureWriter(*s.db);
  store_schema::migrate(*s.db, store_schema::migrations(), Store::kSchemaVersion);
  (void)inspection;
  s.version = Store::kSchemaVersion;
  recoverAbandonedSweeps(s);
}

// A -wal of at most 0 bytes and a -shm of at most 3 are what SQLite leaves when it could not
// set them up (a full disk): no process has ever used them, so they may go.
void removeUnusedSideFiles(const std::string& path) {
  if (sizeOf(path + "-wal") <= 0 && sizeOf(path + "-shm") <= 3) {
    removeQuietly(path + "-wal");
    removeQuietly(path + "-shm");
  }
}

void openForReading(StoreState& s) {
  const std::string& path = s.path;
  s.read_only = true;
  FileFacts facts = examine(path);
  if (!facts.exists) throw StoreError(StoreError::Kind::not_found, path + " does not exist");
  if (facts.empty) return;  // reads as an empty store; the schema is never written into it
  const bool had_wal = exists(path + "-wal"), had_shm = exists(path + "-shm");
  auto openWith = [&](const std::string& target, int flags) {
    s.db = std::make_unique<SqliteConnection>(target, flags | SQLITE_OPEN_NOMUTEX, path);
    sqlite3_busy_timeout(s.db->handle(), kBusyTimeoutMs);
    return store_schema::inspect(*s.db, Store::kSchemaVersion);
  };
  store_schema::Inspection ins;
  if (writable(path) && writable(folderOf(path))) {
    // The normal case: a read-write connection that never writes (query_only). SQLite creates
    // -wal and -shm while it reads a WAL database and removes them when the last user closes;
    // a read-only connection could not remove them and would leave them behind.
    try {
      const bool journal_with_frames = sizeOf(path + "-wal") > 0;
      ins = openWith(path, SQLITE_OPEN_READWRITE);
      s.db->exec("PRAGMA query_only = 1");
      // The last connection to close checkpoints the -wal into the database: for a reader that
      // found frames there (a writer's that is still running, or one that died), that would
      // rewrite the database file. They stay in the -wal, which every reader reads through, for
      // the next writer to apply; a -wal this reader created itself is empty and goes as before.
      if (journal_with_frames) sqlite3_db_config(s.db->handle(), SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    } catch (const StoreError& e) {
      s.db.reset();
      if (e.kind() != StoreError::Kind::full && e.kind() != StoreError::Kind::io) throw;
      // Typically a full disk: the -shm could not grow. Undo what this open created and read a
      // snapshot instead, provided nobody else uses the file (no -wal existed).
      if (had_wal || had_shm) throw;
      removeUnusedSideFiles(path);
      if (exists(path + "-wal") || exists(path + "-shm")) throw;
    }
  } else if (had_wal) {
    // Another process uses the file (or one crashed): its side files exist, read through them.
    ins = openWith(sqliteFileUri(path, "mode=ro"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  if (!s.db) {
    // No -wal: no process has this WAL database open. SQLite can read it without creating side
    // files only as an immutable file (https://www.sqlite.org/wal.html#readonly), which skips
    // locking; so the file's size, times and inode are compared after every read, and any change
    // by another process (whose first write would need to chmod the file, or create -wal in a
    // folder we cannot write, and whose checkpoint rewrites the file) fails the read instead of
    // returning a torn result.
    s.snapshot = fingerprint(path);
    ins = openWith(sqliteFileUri(path, "mode=ro&immutable=1"), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI);
  }
  if (ins.empty_schema) {
    s.db.reset();
    return;
  }
  s.version = ins.version;
}

}  // namespace

void StoreState::verifySnapshot() const {
  if (!snapshot) return;
  if (fingerprint(path) != snapshot || exists(path + "-wal"))
    throw StoreError(StoreError::Kind::io, path + " changed while it was being read (another process is writing it); "
                                                  "run the command again");
}

Store::Store(const std::string& path, StoreMode mode) : impl_(std::make_unique<Impl>()) {
  if (path.empty()) throw StoreError(StoreError::Kind::invalid, "no database path given");
  impl_->path = path;
  if (mode == StoreMode::read) openForReading(*impl_);
  else openForWriting(*impl_, mode == StoreMode::create);
}

Store::~Store() = default;

const std::string& Store::path() const { return impl_->path; }

bool Store::readOnly() const { return impl_->read_only; }

std::vector<std::string> Store::check() {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->db) {
    if (impl_->version == 0 && sizeOf(impl_->path) == 0)
      return {impl_->path + " is empty (0 bytes): there is no AttnScope database in it"};
    return {};
  }
  auto problems = store_schema::integrityProblems(*impl_->db, true);
  // Pages that do not check out make every row suspect; rows are decoded only in a sound file.
  if (problems.empty()) {
    impl_->sweepRowProblems(problems);
    impl_->runRowProblems(problems);
    impl_->recordingRowProblems(problems);
  }
  impl_->verifySnapshot();
  return problems;
}

}  // namespace attnscope
