#include "core/files/output_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

namespace attnscope {
namespace {

std::runtime_error cannotWrite(const std::string& path, int err) {
  return std::runtime_error("cannot write " + path + ": " + std::strerror(err));
}

std::string folderOf(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string nameOf(const std::string& path) { return std::filesystem::path(path).filename().string(); }

std::optional<struct stat> statOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

bool sameFile(const struct stat& a, const std::optional<struct stat>& b) {
  return b && a.st_dev == b->st_dev && a.st_ino == b->st_ino;
}

const char* kindOf(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a folder";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& out, mode_t mode, OutputRule rule) {
  std::string why = out + " is " + kindOf(mode) + "; ";
  if (S_ISDIR(mode)) why += "give a file name";
  else if (rule == OutputRule::entry) why += "only a regular file of this name is replaced here (remove it, or choose another folder)";
  else if (rule == OutputRule::file) why += "this format is written to a regular file (choose a file name)";
  else why += "exports write to a regular file, a FIFO or a character device";
  throw OutputRefused(why);
}

// Where an output lands: nothing there yet, a regular file to replace (through a followed link,
// the file it points to), or a FIFO or character device to write to directly.
struct OutputTarget {
  enum class Kind { absent, regular, stream } kind = Kind::absent;
  std::string path;
  struct stat st {};
};

OutputTarget resolve(const std::string& out, OutputRule rule) {
  OutputTarget t;
  t.path = out;
  // Anything lstat cannot see (a missing folder, no search permission) is left to the write,
  // whose error says why.
  if (::lstat(out.c_str(), &t.st) != 0) return t;
  if (S_ISLNK(t.st.st_mode)) {
    if (rule == OutputRule::entry) refuse(out, t.st.st_mode, rule);
    if (::stat(out.c_str(), &t.st) != 0)
      throw OutputRefused(out + " is a symbolic link that leads nowhere (" + std::strerror(errno) +
                          "); give the file itself");
    if (S_ISREG(t.st.st_mode)) {
      // The link stays; the file it points to is replaced, in its own folder.
      char* real = ::realpath(out.c_str(), nullptr);
      const std::string target = real ? real : "";
      std::free(real);
      struct stat again {};
      if (target.empty() || ::lstat(target.c_str(), &again) != 0 || !S_ISREG(again.st_mode) ||
          again.st_dev != t.st.st_dev || again.st_ino != t.st.st_ino)
        throw OutputRefused(out + " is a symbolic link to a file that has no path of its own; give the file itself");
      t.path = target;
      t.kind = OutputTarget::Kind::regular;
      return t;
    }
  }
  if (S_ISREG(t.st.st_mode)) {
    t.kind = OutputTarget::Kind::regular;
    return t;
  }
  if (rule == OutputRule::text && (S_ISFIFO(t.st.st_mode) || S_ISCHR(t.st.st_mode))) {
    t.kind = OutputTarget::Kind::stream;
    return t;
  }
  refuse(out, t.st.st_mode, rule);
}

// The database's side files by name: `name` in the folder of `db` (by the folder's inode).
bool isSideFileName(const OutputTarget& t, const std::string& db) {
  const auto folder = statOf(folderOf(t.path));
  if (!folder) return false;
  for (const char* suffix : {"-wal", "-shm", "-journal"})
    if (nameOf(t.path) == nameOf(db) + suffix && sameFile(*folder, statOf(folderOf(db)))) return true;
  return false;
}

void refuseDatabase(const std::string& out, const OutputTarget& t, const std::string& db_path) {
  if (!db_path.empty()) {
    // SQLite names the side files after the path it opened, links resolved.
    char* real = ::realpath(db_path.c_str(), nullptr);
    const std::string db_real = real ? real : db_path;
    std::free(real);
    for (const std::string& db : {db_path, db_real})
      if (isSideFileName(t, db))
        throw OutputRefused(out + " is the name of the database's " + nameOf(t.path).substr(nameOf(db).size() + 1) +
                            " file (SQLite would delete or reuse it); choose another output file");
    if (t.kind == OutputTarget::Kind::absent) return;
    if (sameFile(t.st, statOf(db_path)))
      throw OutputRefused(out + " is the database " + db_path + "; choose another output file");
    for (const char* suffix : {"-wal", "-shm", "-journal"})
      if (sameFile(t.st, statOf(db_path + suffix)))
        throw OutputRefused(out + " is the database's " + std::string(suffix + 1) + " file; choose another output file");
  }
  if (t.kind != OutputTarget::Kind::regular) return;
  // The header through a descriptor of our own: safe, since this is not the file the process has
  // open through SQLite (checked above), and SQLite's locks are kept on descriptors of its own.
  int fd = ::open(t.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
  if (fd < 0) return;
  unsigned char header[72] = {};
  ssize_t n = ::read(fd, header, sizeof header);
  ::close(fd);
  if (n < 16 || std::memcmp(header, "SQLite format 3", 16) != 0) return;
  const bool ours = n >= 72 && header[68] == 'A' && header[69] == 't' && header[70] == 'S' && header[71] == 'c';
  throw OutputRefused(out + (ours ? " is an AttnScope database" : " is an SQLite database") +
                      "; exports never overwrite a database, choose another output file");
}

// `interruptible`: a kept output's temporary, where a held signal is seen within one chunk.
void writeAll(int fd, const std::string& path, std::initializer_list<std::string_view> pieces, bool interruptible) {
  constexpr size_t kChunk = size_t{1} << 20;
  for (std::string_view piece : pieces) {
    for (size_t done = 0; done < piece.size();) {
      if (interruptible) throwIfOutputInterrupted(path);
      ssize_t n = ::write(fd, piece.data() + done, std::min(kChunk, piece.size() - done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw cannotWrite(path, n < 0 ? errno : EIO);
      done += static_cast<size_t>(n);
    }
  }
}

}  // namespace

unsigned newFileMode() {
  // From /proc: umask() can only be read by setting it, which races with other threads.
  unsigned mask = 022;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    std::fclose(f);
  }
  return 0666 & ~mask;
}

void checkOutput(const std::string& out, const std::string& db_path, OutputRule rule) {
  refuseDatabase(out, resolve(out, rule), db_path);
}

int createTemporaryIn(const std::string& dir, const char* tag, std::string& path) {
  std::string tmpl = (std::filesystem::path(dir) / (std::string(".attnscope-") + tag + "-XXXXXX")).string();
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);  // O_CREAT | O_EXCL: never opens what is already there
  if (fd >= 0) path = tmpl;
  return fd;
}

AtomicOutput::AtomicOutput(std::string path, OutputRule rule, OutputUse use)
    : path_(std::move(path)), rule_(rule), use_(use) {
  if (use_ == OutputUse::kept) interrupt_.emplace();
  const OutputTarget t = resolve(path_, rule_ == OutputRule::text ? OutputRule::file : rule_);
  target_ = t.path;
  fd_ = createTemporaryIn(folderOf(target_), "tmp", temp_);
  if (fd_ < 0) throw cannotWrite(path_, errno);
  if (t.kind == OutputTarget::Kind::regular) {
    ::fchmod(fd_, t.st.st_mode & 07777);
    if (t.st.st_uid != ::geteuid() || t.st.st_gid != ::getegid())
      (void)!::fchown(fd_, t.st.st_uid, t.st.st_gid);  // only root may give a file away; others keep theirs
  } else {
    ::fchmod(fd_, static_cast<mode_t>(newFileMode()));
  }
}

AtomicOutput::~AtomicOutput() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicOutput::commit() {
  if (interrupt_) throwIfOutputInterrupted(path_);
  if (use_ == OutputUse::kept && ::fsync(fd_) != 0) throw cannotWrite(path_, errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) throw cannotWrite(path_, errno);
  // Once more just before the rename: what appeared there meanwhile is refused, not replaced.
  const OutputTarget now = resolve(path_, rule_ == OutputRule::text ? OutputRule::file : rule_);
  if (now.path != target_)
    throw OutputRefused(path_ + " changed while it was written (it now leads to " + now.path + "); nothing was replaced");
  if (::rename(temp_.c_str(), target_.c_str()) != 0) throw cannotWrite(path_, errno);
  committed_ = true;
}

void writeOutputFile(const std::string& path, std::initializer_list<std::string_view> pieces, OutputRule rule,
                     OutputUse use) {
  if (resolve(path, rule).kind == OutputTarget::Kind::stream) {
    // Opening a FIFO waits for a reader, as `>` in a shell does; a signal ends the process.
    int fd = ::open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw cannotWrite(path, errno);
    try {
      writeAll(fd, path, pieces, false);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw cannotWrite(path, errno);
    return;
  }
  AtomicOutput out(path, rule, use);
  writeAll(out.fd(), path, pieces, use == OutputUse::kept);
  out.commit();
}

}  // namespace attnscope
