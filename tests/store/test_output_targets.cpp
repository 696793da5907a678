// What an output finds at its path decides what it does: a regular file is replaced, a link is
// followed for a named file and never for a name in a folder, a FIFO or character device gets text
// directly and nothing else; the temporary has a fixed-length name, is never left behind by a
// signal or a file size limit, and the error says why.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>

#include "core/files/output_file.h"
#include "tests/store/store_process_support.h"
#include "tests/store/store_test_support.h"
#include "tests/support/fifo_reader.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using test::readBytes;
using test::TempDir;

std::vector<std::string> listing(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string refusal(const std::string& out, OutputRule rule) {
  try {
    checkOutput(out, "", rule);
    return "accepted";
  } catch (const OutputRefused& e) {
    return e.what();
  }
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

constexpr OutputRule kRules[] = {OutputRule::text, OutputRule::file, OutputRule::entry};

TEST(OutputTargets, ALinkIsFollowedForANamedFileAndNeverInAFolder) {
  TempDir dir;
  const std::string target = dir.file("target.csv"), link = dir.file("link.csv");
  test::writeBytes(target, "old\n");
  fs::create_symlink("target.csv", link);
  writeOutputFile(link, "new\n", OutputRule::text);
  EXPECT_TRUE(fs::is_symlink(link)) << "the link was replaced by a file";
  EXPECT_EQ(readBytes(target), "new\n");
  {
    AtomicOutput chart(link, OutputRule::file);
    EXPECT_EQ(fs::path(chart.tempPath()).parent_path(), dir.path());
    test::writeBytes(chart.tempPath(), "chart\n");
    chart.commit();
  }
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(readBytes(target), "chart\n");
  // A name AttnScope chose (q.npy in --dump's folder) is never written through.
  EXPECT_TRUE(contains(refusal(link, OutputRule::entry), "is a symbolic link")) << refusal(link, OutputRule::entry);
  EXPECT_THROW(writeOutputFile(link, "through\n", OutputRule::entry), OutputRefused);
  EXPECT_EQ(readBytes(target), "chart\n");
  fs::create_symlink("missing.csv", dir.file("dangling.csv"));
  for (OutputRule rule : kRules) {
    EXPECT_TRUE(contains(refusal(dir.file("dangling.csv"), rule), "symbolic link")) << refusal(dir.file("dangling.csv"), rule);
    EXPECT_THROW(writeOutputFile(dir.file("dangling.csv"), "x", rule), OutputRefused);
  }
  EXPECT_FALSE(fs::exists(dir.file("missing.csv")));
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"dangling.csv", "link.csv", "target.csv"}));
}

TEST(OutputTargets, AFifoGetsTextDirectlyAndNothingElse) {
  TempDir dir;
  const std::string fifo = dir.file("pipe.csv");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Our reader is there throughout, so a writer that wrongly opens the FIFO fails, not hangs.
  test::FifoReader reader(fifo);
  ASSERT_TRUE(reader.ok());
  writeOutputFile(fifo, "a,b\n1,2\n", OutputRule::text);
  for (OutputRule rule : {OutputRule::file, OutputRule::entry}) {
    EXPECT_TRUE(contains(refusal(fifo, rule), "is a FIFO")) << refusal(fifo, rule);
    EXPECT_THROW(writeOutputFile(fifo, "x", rule), OutputRefused);
    EXPECT_THROW(AtomicOutput(fifo, rule), OutputRefused);
  }
  EXPECT_EQ(reader.finish(), "a,b\n1,2\n");
  struct stat st {};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
  EXPECT_EQ(listing(dir), std::vector<std::string>{"pipe.csv"});
}

TEST(OutputTargets, ADeviceGetsTextDirectlyAndIsNeverReplaced) {
  TempDir dir;
  // A device node of our own, never the machine's /dev entries: mknod needs root (CAP_MKNOD).
  const std::string dev = dir.file("null");
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod is not allowed here (" << std::strerror(errno) << "); root runs this";
  EXPECT_EQ(refusal(dev, OutputRule::text), "accepted");
  writeOutputFile(dev, "a,b\n", OutputRule::text);
  for (OutputRule rule : {OutputRule::file, OutputRule::entry}) {
    EXPECT_TRUE(contains(refusal(dev, rule), "is a character device")) << refusal(dev, rule);
    EXPECT_THROW(writeOutputFile(dev, "x", rule), OutputRefused);
  }
  struct stat st {};
  ASSERT_EQ(::lstat(dev.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node became a regular file";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(listing(dir), std::vector<std::string>{"null"});
  // /dev/full through a link of our own, as /dev/stdout is one: written to, and the error is its own.
  fs::create_symlink("/dev/full", dir.file("full.csv"));
  try {
    writeOutputFile(dir.file("full.csv"), "x", OutputRule::text);
    ADD_FAILURE() << "wrote into /dev/full";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "No space left on device")) << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(dir.file("full.csv")));
}

TEST(OutputTargets, TheDatabaseSideFileNamesAreRefusedBeforeTheyExist) {
  TempDir dir;
  const std::string db = dir.file("runs.sqlite");
  { Store store(db); }  // closed: no -wal, -shm or -journal exists, as after every command
  fs::create_directory(dir.file("sub"));
  fs::create_symlink(db, dir.file("link.sqlite"));
  for (const std::string& side : {db + "-wal", db + "-shm", db + "-journal", dir.file("sub/../runs.sqlite-wal")}) {
    for (OutputRule rule : kRules) {
      try {
        checkOutput(side, db, rule);
        ADD_FAILURE() << side << " was accepted";
      } catch (const OutputRefused& e) {
        EXPECT_TRUE(contains(e.what(), "database's")) << e.what();
      }
    }
  }
  // The database named through a link of its own: SQLite names the side files after the file.
  EXPECT_THROW(checkOutput(db + "-wal", dir.file("link.sqlite"), OutputRule::text), OutputRefused);
  EXPECT_NO_THROW(checkOutput(dir.file("runs.sqlite-wal.csv"), db, OutputRule::text));
  EXPECT_NO_THROW(checkOutput(dir.file("sub/runs.sqlite-wal"), db, OutputRule::text));
}

TEST(OutputTargets, TemporaryNamesHaveAFixedLengthSoA255ByteNameIsWritten) {
  TempDir dir;
  const std::string longest = dir.file(std::string(251, 'a') + ".csv");  // NAME_MAX
  writeOutputFile(longest, "x\n");
  EXPECT_EQ(readBytes(longest), "x\n");
  AtomicOutput pending(dir.file(std::string(251, 'b') + ".png"));
  const std::string name = fs::path(pending.tempPath()).filename().string();
  EXPECT_EQ(name.rfind(".attnscope-tmp-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string(".attnscope-tmp-XXXXXX").size()) << name;
}

// In a child: a signal while an output's temporary exists ends the process by that signal once
// the temporary is gone; a return is a check that failed.
int interruptedOutput(const std::string& dir, int sig, bool twice) {
  const std::string out = dir + "/chart.png";
  AtomicOutput pending(out);
  ::raise(sig);  // only sets the flag while the output is in progress
  if (twice) {
    ::raise(sig);  // the writer is stuck: the second one ends the process at once
    return 13;
  }
  try {
    throwIfOutputInterrupted(out);
    return 10;
  } catch (const OutputInterrupted& e) {
    if (!contains(e.what(), sig == SIGINT ? "interrupted (SIGINT)" : "interrupted (SIGTERM)")) return 11;
  }
  return 12;  // the process ends here, in the destructor, after the temporary was removed
}

TEST(OutputTargets, ASignalRemovesTheTemporaryThenEndsTheProcess) {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir dir;
    EXPECT_EQ(test::inChild([&] { return interruptedOutput(dir.str(), sig, false); }), 128 + sig) << sig;
    EXPECT_TRUE(listing(dir).empty()) << listing(dir).front();
    EXPECT_EQ(test::inChild([&] { return interruptedOutput(dir.str(), sig, true); }), 128 + sig) << sig;
  }
  // Outside outputs nothing is changed, and a signal the process ignores (SIGINT of a background
  // job) stays ignored while the output completes.
  TempDir dir;
  EXPECT_EQ(test::inChild([&] {
              ::signal(SIGINT, SIG_IGN);
              writeOutputFile(dir.file("s1.csv"), "x\n");
              struct sigaction term {};
              ::sigaction(SIGTERM, nullptr, &term);
              if (term.sa_handler != SIG_DFL) return 1;
              AtomicOutput pending(dir.file("chart.png"));
              ::raise(SIGINT);
              pending.commit();
              return 0;
            }),
            0);
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"chart.png", "s1.csv"}));
}

TEST(OutputTargets, TheFileSizeLimitIsAnErrorAndLeavesNothing) {
  TempDir dir;
  test::writeBytes(dir.file("s1.csv"), "old\n");
  const int code = test::inChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);  // as attnscope's main() does
    const rlimit lim{4096, RLIM_INFINITY};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      writeOutputFile(dir.file("s1.csv"), std::string(10000, 'x'));
      return 1;
    } catch (const std::runtime_error& e) {
      return contains(e.what(), "cannot write " + dir.file("s1.csv") + ": File too large") ? 0 : 2;
    }
  });
  EXPECT_EQ(code, 0);
  EXPECT_EQ(readBytes(dir.file("s1.csv")), "old\n");
  EXPECT_EQ(listing(dir), std::vector<std::string>{"s1.csv"});
}

}  // namespace
}  // namespace attnscope
