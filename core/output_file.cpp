#include "core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace attnscope {
namespace {

std::runtime_error cannotWrite(const std::string& path, int err) {
  return std::runtime_error("cannot write " + path + ": " + std::strerror(err));
}

bool sameFile(const struct stat& a, const std::string& other) {
  struct stat b {};
  return ::stat(other.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
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

void refuseDatabaseOutput(const std::string& out, const std::string& db_path) {
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) return;  // nothing there yet
  if (!db_path.empty()) {
    if (sameFile(st, db_path))
      throw OutputRefused(out + " is the database " + db_path + "; choose another output file");
    for (const char* suffix : {"-wal", "-shm", "-journal"})
      if (sameFile(st, db_path + suffix))
        throw OutputRefused(out + " is the database's " + std::string(suffix + 1) + " file; choose another output file");
  }
  if (!S_ISREG(st.st_mode)) return;  // a folder or a device: the write itself says why it fails
  // The header through a descriptor of our own: safe, since this is not the file the process has
  // open through SQLite (checked above), and POSIX locks are only lost on the file itself.
  int fd = ::open(out.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  unsigned char header[72] = {};
  ssize_t n = ::read(fd, header, sizeof header);
  ::close(fd);
  if (n < 16 || std::memcmp(header, "SQLite format 3", 16) != 0) return;
  const bool ours = n >= 72 && header[68] == 'A' && header[69] == 't' && header[70] == 'S' && header[71] == 'c';
  throw OutputRefused(out + (ours ? " is an AttnScope database" : " is an SQLite database") +
                      "; exports never overwrite a database, choose another output file");
}

AtomicOutput::AtomicOutput(std::string path) : path_(std::move(path)) {
  std::filesystem::path p(path_);
  std::string dir = p.parent_path().empty() ? std::string(".") : p.parent_path().string();
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) throw cannotWrite(path_, EISDIR);
  // Keep the extension last: Qt's writers pick nothing from it, but people reading a leftover do.
  std::string tmpl = (std::filesystem::path(dir) / ("." + p.filename().string() + ".tmp-XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw cannotWrite(path_, errno);
  ::fchmod(fd, ::stat(path_.c_str(), &st) == 0 ? (st.st_mode & 07777) : newFileMode());
  ::close(fd);
  temp_ = tmpl;
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicOutput::commit() {
  int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw cannotWrite(path_, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw cannotWrite(path_, err);
  if (::rename(temp_.c_str(), path_.c_str()) != 0) throw cannotWrite(path_, errno);
  committed_ = true;
}

void writeOutputFile(const std::string& path, std::string_view content) {
  AtomicOutput out(path);
  int fd = ::open(out.tempPath().c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw cannotWrite(path, errno);
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw cannotWrite(path, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw cannotWrite(path, errno);
  out.commit();
}

}  // namespace attnscope
