#pragma once
// Makes SQLite's locks in this process immune to other code touching the database's files, and
// tells a writer when the files it holds are no longer the ones on disk.
//
// SQLite's unix VFS locks with POSIX record locks (fcntl F_SETLK). Those belong to the process
// and the inode, and closing ANY descriptor of the file drops all of them: a file dialog that
// sniffs `runs.sqlite-wal` for an icon, a thumbnailer or a drag and drop in the GUI process
// silently leaves the process holding no lock, another process then believes it is the last
// user, checkpoints and deletes the live -wal and -shm, and the database is lost.
//
// The guard replaces three of the VFS's system calls (sqlite3_vfs::xSetSystemCall): open and
// close, to know which descriptors SQLite holds for which inode and path, and fcntl, to take
// every lock as an open file description lock (F_OFD_SETLK, Linux 3.15+) on one description per
// inode that the guard owns. Such locks belong to that description only, so descriptors opened
// and closed by anything else in the process leave them alone. One description per inode keeps
// POSIX's per-process semantics that SQLite's own bookkeeping relies on (connections of one
// process share their locks through its unixInodeInfo, and the last one to unlock may be another
// connection than the one that locked); OFD and POSIX locks conflict with each other, so other
// programs that lock the classic way (the sqlite3 shell) still exclude and are excluded.
// Where the kernel refuses OFD locks, SQLite's POSIX locks are used unchanged.

#include <optional>
#include <string>

namespace attnscope {

// Installs the guard into SQLite's unix VFSes; idempotent and thread-safe. Called by every
// SqliteConnection before it opens a file, so no database is ever opened without it.
void installSqliteFileGuard();

// Whether locks are taken as OFD locks (false before installation or on a kernel without them).
bool sqliteUsesOfdLocks();

// For the database SQLite opened as `database_file` (its full path, sqlite3_db_filename): the
// first of the database, its -wal and its -shm that SQLite holds open in this process but that is
// no longer the file at that path (deleted, or replaced by another file), as one sentence; empty
// when they all still are. Writing then would go into a file nobody else can see.
std::optional<std::string> sqliteHeldFileProblem(const std::string& database_file);

}  // namespace attnscope
