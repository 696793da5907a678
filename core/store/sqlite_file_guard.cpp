#include "core/store/sqlite_file_guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace attnscope {
namespace {

using OpenCall = int (*)(const char*, int, int);
using CloseCall = int (*)(int);
using FcntlCall = int (*)(int, int, ...);

OpenCall real_open = nullptr;
CloseCall real_close = nullptr;
FcntlCall real_fcntl = nullptr;
std::atomic<bool> ofd_locks{false};

using InodeKey = std::pair<dev_t, ino_t>;

struct HeldFile {
  InodeKey inode;
  std::string path;  // as SQLite named it when opening
};

struct InodeLocks {
  int sqlite_descriptors = 0;  // SQLite's open descriptors of this inode
  int lock_fd = -1;            // the guard's own description, made at the first lock
};

// Every regular file SQLite holds open, by descriptor, and the guard's lock description per inode.
struct GuardTables {
  std::mutex mutex;
  std::unordered_map<int, HeldFile> files;
  std::map<InodeKey, InodeLocks> inodes;
};

GuardTables& tables() {
  static GuardTables* t = new GuardTables;  // never destroyed: SQLite may close files at exit
  return *t;
}

int guardedOpen(const char* path, int flags, int mode) {
  int fd = real_open(path, flags, mode);
  if (fd < 0) return fd;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    GuardTables& t = tables();
    std::lock_guard lock(t.mutex);
    InodeKey key{st.st_dev, st.st_ino};
    t.files[fd] = HeldFile{key, path};
    ++t.inodes[key].sqlite_descriptors;
  }
  return fd;
}

int guardedClose(int fd) {
  int lock_fd = -1;
  {
    GuardTables& t = tables();
    std::lock_guard lock(t.mutex);
    auto it = t.files.find(fd);
    if (it != t.files.end()) {
      auto inode = t.inodes.find(it->second.inode);
      // SQLite keeps a descriptor open while the process holds any lock on its inode (closing
      // one would drop POSIX locks), so when its last descriptor goes, no lock is held: the
      // guard's description may go too.
      if (inode != t.inodes.end() && --inode->second.sqlite_descriptors <= 0) {
        lock_fd = inode->second.lock_fd;
        t.inodes.erase(inode);
      }
      t.files.erase(it);
    }
  }
  int rc = real_close(fd);
  if (lock_fd >= 0) {
    int saved = errno;
    real_close(lock_fd);
    errno = saved;
  }
  return rc;
}

// A description of the same inode for locking: read-write where the file allows it (a write lock
// needs one; the first descriptor SQLite opened may be read-only), else read-only.
int openLockDescription(int fd, const InodeKey& key) {
  int access = real_fcntl(fd, F_GETFL) & O_ACCMODE;
  if (access != O_RDWR) {
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    int reopened = real_open(self.c_str(), O_RDWR | O_CLOEXEC, 0);
    if (reopened >= 0) {
      struct stat st {};
      if (::fstat(reopened, &st) == 0 && InodeKey{st.st_dev, st.st_ino} == key) return reopened;
      real_close(reopened);
    }
  }
  return real_fcntl(fd, F_DUPFD_CLOEXEC, 0);
}

// The descriptor to lock `fd`'s inode through; -1 when SQLite did not open fd through the guard.
int lockDescriptionFor(int fd) {
  GuardTables& t = tables();
  std::lock_guard lock(t.mutex);
  auto it = t.files.find(fd);
  if (it == t.files.end()) return -1;
  InodeLocks& inode = t.inodes[it->second.inode];
  if (inode.lock_fd < 0) inode.lock_fd = openLockDescription(fd, it->second.inode);
  return inode.lock_fd;
}

int ofdCommand(int cmd) {
  switch (cmd) {
    case F_SETLK: return F_OFD_SETLK;
    case F_SETLKW: return F_OFD_SETLKW;
    case F_GETLK: return F_OFD_GETLK;
    default: return 0;
  }
}

int guardedFcntl(int fd, int cmd, ...) {
  va_list args;
  va_start(args, cmd);
  void* arg = va_arg(args, void*);  // as glibc's fcntl reads its optional argument
  va_end(args);
  const int ofd = ofdCommand(cmd);
  if (ofd == 0 || !ofd_locks.load(std::memory_order_relaxed)) return real_fcntl(fd, cmd, arg);
  const int lock_fd = lockDescriptionFor(fd);
  if (lock_fd < 0) return real_fcntl(fd, cmd, arg);
  auto* request = static_cast<struct flock*>(arg);
  struct flock copy = *request;
  copy.l_pid = 0;  // required of OFD locks
  int rc = real_fcntl(lock_fd, ofd, &copy);
  if (rc == 0 && cmd == F_GETLK) {
    *request = copy;  // l_pid is -1 for a conflicting OFD lock; SQLite reads only l_type
  }
  return rc;
}

// Whether this kernel takes OFD locks: a probe on a fresh anonymous file.
bool kernelHasOfdLocks() {
  FILE* probe = std::tmpfile();
  if (!probe) return false;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 1;
  bool ok = ::fcntl(fileno(probe), F_OFD_SETLK, &lock) == 0;
  std::fclose(probe);
  return ok;
}

void install() {
  // sqlite3_vfs_find initialises SQLite; xSetSystemCall must run before any file is open.
  sqlite3_vfs* vfs = sqlite3_vfs_find("unix");
  if (!vfs || vfs->iVersion < 3 || !vfs->xSetSystemCall || !vfs->xGetSystemCall) return;
  real_open = reinterpret_cast<OpenCall>(vfs->xGetSystemCall(vfs, "open"));
  real_close = reinterpret_cast<CloseCall>(vfs->xGetSystemCall(vfs, "close"));
  real_fcntl = reinterpret_cast<FcntlCall>(vfs->xGetSystemCall(vfs, "fcntl"));
  if (!real_open || !real_close || !real_fcntl) return;
  // The system-call table is shared by every unix VFS (unix, unix-excl, unix-none, ...).
  if (vfs->xSetSystemCall(vfs, "open", reinterpret_cast<sqlite3_syscall_ptr>(&guardedOpen)) != SQLITE_OK) return;
  if (vfs->xSetSystemCall(vfs, "close", reinterpret_cast<sqlite3_syscall_ptr>(&guardedClose)) != SQLITE_OK) return;
  if (vfs->xSetSystemCall(vfs, "fcntl", reinterpret_cast<sqlite3_syscall_ptr>(&guardedFcntl)) != SQLITE_OK) return;
  ofd_locks = kernelHasOfdLocks();
}

}  // namespace

void installSqliteFileGuard() {
  static std::once_flag once;
  std::call_once(once, install);
}

bool sqliteUsesOfdLocks() { return ofd_locks.load(); }

std::optional<std::string> sqliteHeldFileProblem(const std::string& database_file) {
  if (!real_open) return std::nullopt;
  const std::string names[] = {database_file, database_file + "-wal", database_file + "-shm"};
  std::vector<HeldFile> held;
  {
    GuardTables& t = tables();
    std::lock_guard lock(t.mutex);
    for (const std::string& name : names)
      for (const auto& [fd, file] : t.files)
        if (file.path == name) held.push_back(file);
  }
  for (const HeldFile& file : held) {
    struct stat st {};
    if (::stat(file.path.c_str(), &st) != 0)
      return file.path + " was deleted by another program while this process had it open";
    if (InodeKey{st.st_dev, st.st_ino} != file.inode)
      return file.path + " was replaced by another file while this process had it open";
  }
  return std::nullopt;
}

}  // namespace attnscope
