// A full disk: a small tmpfs mounted in a private mount namespace of a child process (as root, or
// in a user namespace). Where the kernel allows neither (a locked-down container), the same
// scenarios run with RLIMIT_FSIZE, which makes every write that would grow a file fail (EFBIG
// instead of ENOSPC, which SQLite reports as an I/O error and the store as a full disk), and the
// test says so.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/store/store.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

using test::TempDir;

enum class DiskKind { tmpfs, rlimit };

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  return static_cast<bool>(f);
}

// In the child: makes `dir` a 2 MiB tmpfs visible to this process only. False when not allowed.
bool mountSmallDisk(const std::string& dir) {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (unshare(CLONE_NEWNS) != 0) {
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return false;
    writeFile("/proc/self/setgroups", "deny");
    if (!writeFile("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !writeFile("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1"))
      return false;
  }
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return false;
  return mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=2m,mode=0777") == 0;
}

// Fills the tmpfs with a filler file (of `bytes`, or until full), or forbids growing any file;
// undone by makeRoom().
void fillDisk(DiskKind kind, const std::string& dir, int64_t bytes = -1) {
  if (kind == DiskKind::rlimit) {
    if (bytes >= 0) return;  // the writer sets its own limit
    rlimit lim{0, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &lim);
    return;
  }
  int fd = ::open((dir + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::string block(4096, 'x');
  for (int64_t done = 0; bytes < 0 || done < bytes; done += 4096)
    if (::write(fd, block.data(), block.size()) <= 0) break;
  ::close(fd);
}

void makeRoom(DiskKind kind, const std::string& dir) {
  if (kind == DiskKind::rlimit) {
    rlimit lim{RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &lim);
    return;
  }
  ::unlink((dir + "/filler").c_str());
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Every scenario, in the child that owns the small disk. Returns 0 or the number of the check
// that failed (printed on stderr).
int fullDiskScenarios(DiskKind kind, const std::string& dir) {
  int step = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "full disk (%s), check %d: %s\n", kind == DiskKind::tmpfs ? "tmpfs" : "RLIMIT_FSIZE", step,
                 what.c_str());
    return step;
  };
  const std::string db = dir + "/runs.sqlite";
  {
    Store store(db);
    int64_t id = store.createSweep(test::sampleSweep("before"), 0);
    store.saveRun(id, test::sampleRun(0, 100));
    store.setSweepState(id, "finished");
  }
  fillDisk(kind, dir);

  // 1. `run --db new.sqlite`: a clean error, no 0-byte database, no temporary file.
  ++step;
  try {
    Store store(dir + "/new.sqlite");
    return fail("a new database was created on a full disk");
  } catch (const StoreError& e) {
    if (e.kind() != StoreError::Kind::full) return fail(std::string("not reported as a full disk: ") + e.what());
    if (std::string(e.what()).find("cannot create " + dir + "/new.sqlite") == std::string::npos) return fail(e.what());
  }
  for (const auto& name : listing(dir))
    if (name != "runs.sqlite" && name != "filler") return fail("left behind: " + name);

  // 2. `runs` on a full disk reads, and leaves no side files (no 3-byte -shm).
  ++step;
  {
    Store store(db, StoreMode::read);
    if (store.sweeps().size() != 1 || store.runs(1).size() != 1) return fail("could not read");
  }
  for (const auto& name : listing(dir))
    if (name != "runs.sqlite" && name != "filler") return fail("left behind: " + name);

  // 3. A sweep that fills the disk: the points saved before stay, the sweep is not left running.
  // A reserve file is deleted afterwards, as a user would make room, so that the file can be
  // checked and written again.
  ++step;
  makeRoom(kind, dir);
  fillDisk(kind, dir, 1 << 20);
  int64_t saved = -1;
  {
    int pipefd[2];
    if (pipe(pipefd) != 0) return fail("pipe");
    int code = test::inChild([&] {
      Store store(db);
      int64_t id = store.createSweep(test::sampleSweep("fills the disk"), 0);
      if (kind == DiskKind::rlimit) {
        rlimit lim{static_cast<rlim_t>(std::filesystem::file_size(db) + 600 * 1024), RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &lim);
      }
      int64_t n = 0;
      try {
        for (;; ++n) store.saveRun(id, test::sampleRun(n, 4000));
      } catch (const StoreError& e) {
        if (::write(pipefd[1], &n, sizeof n) != sizeof n) return 20;
        try {
          store.setSweepState(id, "failed");
        } catch (const StoreError&) {
          // Also full: the next open sees this process gone and says interrupted.
        }
        if (e.kind() == StoreError::Kind::full) return 0;
        std::fprintf(stderr, "not reported as a full disk: %s\n", e.what());
        return 21;
      }
    });
    if (::read(pipefd[0], &saved, sizeof saved) != sizeof saved) saved = -1;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    if (code != 0) return fail("the sweep process ended with " + std::to_string(code));
  }
  if (saved < 1) return fail("the disk filled before any point was saved");
  makeRoom(kind, dir);
  {
    Store store(db);
    auto sw = store.sweep(2);
    if (!sw) return fail("the sweep is gone");
    if (sw->state != "failed" && sw->state != "interrupted") return fail("the sweep is " + sw->state);
    if (sw->run_count != saved)
      return fail(std::to_string(sw->run_count) + " points kept of " + std::to_string(saved) + " saved");
    if (store.runs(1).size() != 1) return fail("an older sweep lost a run");
    if (!store.check().empty()) return fail("the file is damaged: " + store.check().front());
    int64_t more = store.createSweep(test::sampleSweep("after"), 0);
    store.saveRun(more, test::sampleRun(1, 10));
  }
  for (const auto& name : listing(dir))
    if (name != "runs.sqlite") return fail("left behind: " + name);
  return 0;
}

TEST(StoreFullDisk, CleanErrorsNothingBrokenLeftBehindFinishedPointsKept) {
  TempDir dir;
  const std::string disk = dir.file("disk");
  std::filesystem::create_directory(disk);
  int code = test::inChild([&] {
    if (!mountSmallDisk(disk)) return 77;
    return fullDiskScenarios(DiskKind::tmpfs, disk);
  });
  if (code == 77) {
    std::fprintf(stderr, "note: no tmpfs mount allowed here; simulating the full disk with RLIMIT_FSIZE\n");
    signal(SIGXFSZ, SIG_IGN);
    code = test::inChild([&] { return fullDiskScenarios(DiskKind::rlimit, disk); });
  }
  EXPECT_EQ(code, 0) << "see the check named on stderr";
}

TEST(StoreFullDisk, RlimitSimulationAlsoHolds) {
  // The fallback itself is exercised everywhere, so that it is known to work where it is needed.
  TempDir dir;
  signal(SIGXFSZ, SIG_IGN);
  EXPECT_EQ(test::inChild([&] { return fullDiskScenarios(DiskKind::rlimit, dir.path().string()); }), 0);
}

}  // namespace
}  // namespace attnscope
