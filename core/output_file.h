#pragma once
// Output files (exports, reports): written to a temporary file in the same folder and renamed
// into place, so a full disk or a crash never leaves half a file over the old one; and never the
// database itself, nor any other SQLite database, whatever path names it.

#include <stdexcept>
#include <string>
#include <string_view>

namespace attnscope {

// Thrown when an output path must not be written (it is bad input, not a failure).
class OutputRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws OutputRefused when `out` is the database at `db_path` (same device and inode, so any
// path to it, hard links included), one of its -wal/-shm/-journal files, or an existing SQLite
// database. `db_path` may be empty.
void refuseDatabaseOutput(const std::string& out, const std::string& db_path);

// A temporary sibling of `path` for a writer that needs a file name (Qt's image and PDF writers).
// commit() renames it over `path`; the destructor removes it when commit() was not reached.
// Failures throw std::runtime_error "cannot write PATH: <reason>".
class AtomicOutput {
 public:
  explicit AtomicOutput(std::string path);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& tempPath() const { return temp_; }
  const std::string& path() const { return path_; }
  // fsync, then rename; an existing file at `path` keeps its permission bits.
  void commit();

 private:
  std::string path_, temp_;
  bool committed_ = false;
};

// The permission bits a newly created file gets from this process's umask (0666 & ~umask).
unsigned newFileMode();

// `content` into `path` through an AtomicOutput.
void writeOutputFile(const std::string& path, std::string_view content);

}  // namespace attnscope
