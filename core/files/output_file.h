#pragma once
// Output files (exports, reports, --dump): written to a temporary file in the same folder and
// renamed into place, so a full disk, a signal or a crash never leaves half a file over the old
// one; only a regular file is ever replaced, and never the database itself, its side files, nor
// any other SQLite database, whatever path names them.

#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/files/output_interrupt.h"

namespace attnscope {

// Thrown when an output path must not be written (it is bad input, not a failure).
class OutputRefused : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// What may be at an output path besides nothing or a regular file. A block device, a socket or a
// folder is refused by every rule.
enum class OutputRule {
  // A file the user named for text (export csv, json, trace): a symbolic link is followed and the
  // file it points to replaced (a link to nothing is refused); a FIFO or a character device is
  // written to directly.
  text,
  // A file the user named for a writer that needs a real file (png, svg, pdf): a link is followed
  // as for text; a FIFO or a device is refused.
  file,
  // A name AttnScope chose inside a folder the user named (the report's charts, --dump's .npy
  // files): nothing there, or a regular file, which is replaced; a link is never followed.
  entry,
};

// Who the output is for. kept: a person (exports, reports, --dump): flushed to the disk before the
// rename, and SIGINT and SIGTERM held until its temporary is gone. scratch: a private folder the
// run removes itself (the torch worker's inputs): neither, so a signal reaches the run as before.
enum class OutputUse { kept, scratch };

// Throws OutputRefused when `out` may not be written under `rule`, or when it (or the file a link
// of it points to) is the database at `db_path` (same device and inode, so any path to it, hard
// links included), one of its -wal, -shm or -journal files (by inode, or by name when they do not
// exist yet: SQLite would delete such a file), or an existing SQLite database. `db_path` may be
// empty. Writers check the same again when they write.
void checkOutput(const std::string& out, const std::string& db_path, OutputRule rule);

// A new file named .attnscope-TAG-XXXXXX in `dir`, created exclusively (never through a link)
// with mode 0600: a fixed length, so that an output whose own name is 255 bytes still has a
// temporary, and a name a person who finds a leftover recognises. Returns the open descriptor
// (and its path in `path`), or -1 with errno set.
int createTemporaryIn(const std::string& dir, const char* tag, std::string& path);

// A temporary file next to the output for a writer that needs a file name (Qt's image and PDF
// writers) or a descriptor. commit() renames it over the output; the destructor removes it when
// commit() was not reached. A kept output holds SIGINT and SIGTERM until it is gone
// (core/files/output_interrupt.h). Throws OutputRefused for what `rule` refuses (a FIFO or a device is
// refused here even for text: writeOutputFile writes to those directly), and std::runtime_error
// "cannot write PATH: <reason>" for any failure.
class AtomicOutput {
 public:
  explicit AtomicOutput(std::string path, OutputRule rule = OutputRule::file, OutputUse use = OutputUse::kept);
  ~AtomicOutput();
  AtomicOutput(const AtomicOutput&) = delete;
  AtomicOutput& operator=(const AtomicOutput&) = delete;

  const std::string& tempPath() const { return temp_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }  // the temporary, open for writing until commit()
  // fsync (a kept output), then rename; an existing file keeps its permission bits and, where the
  // process may set them, its owner and group. Throws OutputInterrupted after a signal.
  void commit();

 private:
  // First member: ends after the destructor removed the temporary. Empty for scratch.
  std::optional<OutputInterruptScope> interrupt_;
  std::string path_, target_, temp_;
  OutputRule rule_;
  OutputUse use_;
  int fd_ = -1;
  bool committed_ = false;
};

// The permission bits a newly created file gets from this process's umask (0666 & ~umask).
unsigned newFileMode();

// `pieces`, one after the other, into `path`: through an AtomicOutput, or written directly to a
// FIFO or character device that OutputRule::text allows.
void writeOutputFile(const std::string& path, std::initializer_list<std::string_view> pieces,
                     OutputRule rule = OutputRule::text, OutputUse use = OutputUse::kept);
inline void writeOutputFile(const std::string& path, std::string_view content, OutputRule rule = OutputRule::text) {
  writeOutputFile(path, {content}, rule);
}

}  // namespace attnscope
