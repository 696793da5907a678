// The real binary's outputs against what is already at their names: links, FIFOs, device nodes
// of our own (never the machine's /dev entries), folders, the database's side-file names; then a
// report interrupted by a signal, 255-byte names, and the file size limit (`ulimit -f`).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/store/store_cli_support.h"
#include "tests/support/fifo_reader.h"

namespace {

namespace fs = std::filesystem;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

mode_t typeOf(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

// Names a person would find left behind: our temporaries start with a dot.
std::vector<std::string> hidden(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string()[0] == '.') names.push_back(e.path().filename().string());
  return names;
}

CliResult exportTo(const Db& db, const std::string& format, const std::string& out) {
  return runCli({"export", "S1", "--format", format, "--out", out, "--db", db.path});
}

TEST(StoreCliOutputs, ExportFollowsLinksWritesIntoFifosAndDevicesAndReplacesNoneOfThem) {
  Db db;
  saveOneRun(db.path);
  const std::string target = db.dir + "/target.csv", link = db.dir + "/link.csv";
  std::ofstream(target) << "old\n";
  fs::create_symlink("target.csv", link);
  EXPECT_EQ(exportTo(db, "csv", link).code, 0);
  EXPECT_EQ(typeOf(link), S_IFLNK) << "the link was replaced";
  EXPECT_TRUE(has(readFile(target), "backend")) << readFile(target);

  fs::create_symlink("missing.csv", db.dir + "/dangling.csv");
  CliResult dangling = exportTo(db, "csv", db.dir + "/dangling.csv");
  EXPECT_EQ(dangling.code, 2);
  EXPECT_TRUE(has(dangling.err, "--out: ") && has(dangling.err, "symbolic link")) << dangling.err;
  EXPECT_FALSE(fs::exists(db.dir + "/missing.csv"));

  const std::string fifo = db.dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No reader: a chart is refused before the FIFO is opened, so this cannot hang.
  CliResult png = exportTo(db, "png", fifo);
  EXPECT_EQ(png.code, 2);
  EXPECT_TRUE(has(png.err, "is a FIFO")) << png.err;
  {
    attnscope::test::FifoReader reader(fifo);
    ASSERT_TRUE(reader.ok());
    CliResult csv = exportTo(db, "csv", fifo);
    EXPECT_EQ(csv.code, 0) << csv.err;
    EXPECT_TRUE(has(reader.finish(), "backend"));
  }
  EXPECT_EQ(typeOf(fifo), S_IFIFO) << "the FIFO became a regular file";

  CliResult folder = exportTo(db, "json", db.dir);
  EXPECT_EQ(folder.code, 2);
  EXPECT_TRUE(has(folder.err, "is a folder")) << folder.err;

  // A null-like device node of our own (mknod needs root): text goes in, a chart is refused.
  const std::string dev = db.dir + "/null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) {
    EXPECT_EQ(exportTo(db, "csv", dev).code, 0);
    EXPECT_EQ(exportTo(db, "trace", dev).code, 0);
    EXPECT_EQ(exportTo(db, "pdf", dev).code, 2);
    EXPECT_EQ(typeOf(dev), S_IFCHR) << "the device node became a regular file";
  }
  EXPECT_TRUE(hidden(db.dir).empty()) << hidden(db.dir).front();
}

TEST(StoreCliOutputs, TheDatabaseSideFileNamesAreRefused) {
  Db db;
  saveOneRun(db.path);
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    CliResult r = exportTo(db, "csv", db.path + suffix);
    EXPECT_EQ(r.code, 2) << suffix << ": " << r.out;
    EXPECT_TRUE(has(r.err, "database's")) << r.err;
    EXPECT_FALSE(fs::exists(db.path + suffix)) << suffix;
  }
  EXPECT_EQ(runCli({"check", "--db", db.path}).code, 0);
}

TEST(StoreCliOutputs, ReportRefusesNamesThatAreNotRegularFilesBeforeWritingAnything) {
#ifndef ATTNSCOPE_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (ATTNSCOPE_GUI=OFF), so it has no report";
#endif
  Db db;
  saveOneRun(db.path);
  const std::string rep = db.dir + "/rep", outside = db.dir + "/precious.png";
  fs::create_directory(rep);
  std::ofstream(outside) << "precious";
  fs::create_symlink(outside, rep + "/memory.png");
  CliResult link = runCli({"report", "S1", "--out", rep, "--db", db.path});
  EXPECT_EQ(link.code, 2) << link.err;
  EXPECT_TRUE(has(link.err, "memory.png is a symbolic link")) << link.err;
  EXPECT_EQ(readFile(outside), "precious");
  fs::remove(rep + "/memory.png");
  ASSERT_EQ(::mkfifo((rep + "/time.png").c_str(), 0600), 0);
  CliResult fifo = runCli({"report", "S1", "--out", rep, "--db", db.path});
  EXPECT_EQ(fifo.code, 2) << fifo.err;
  EXPECT_TRUE(has(fifo.err, "time.png is a FIFO")) << fifo.err;
  std::vector<std::string> written;
  for (const auto& e : fs::directory_iterator(rep)) written.push_back(e.path().filename().string());
  EXPECT_EQ(written, std::vector<std::string>{"time.png"}) << "something was written before the refusal";
}

TEST(StoreCliOutputs, AnInterruptedReportLeavesNoTemporaryFile) {
#ifndef ATTNSCOPE_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (ATTNSCOPE_GUI=OFF), so it has no report";
#endif
  Db db;
  CliResult sweep = runCli({"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "1,2", "--seq", "8,16",
                            "--head-dim", "8", "--reps", "1", "--warmup", "0", "--quiet", "--db", db.path});
  ASSERT_EQ(sweep.code, 0) << sweep.err;
  // A signal at every stage: while charts are drawn, between them, while the PDF is drawn.
  int interrupted = 0;
  for (int step = 0; step < 16; ++step) {
    const std::string rep = db.dir + "/rep" + std::to_string(step);
    const int sig = step % 2 ? SIGINT : SIGTERM;
    const int pid = startCli({"report", "S1", "--out", rep, "--db", db.path}, {"QT_QPA_PLATFORM=offscreen"});
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 100 * step));
    ::kill(pid, sig);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const bool ended_by_signal = WIFSIGNALED(status) && WTERMSIG(status) == sig;
    EXPECT_TRUE(ended_by_signal || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) << "status " << status;
    interrupted += ended_by_signal;
    if (fs::exists(rep)) {
      EXPECT_TRUE(hidden(rep).empty()) << "step " << step << " left " << hidden(rep).front();
    }
  }
  EXPECT_GT(interrupted, 0) << "no report was interrupted; the delays are too long for this machine";
}

TEST(StoreCliOutputs, NamesOf255BytesAreWritten) {
  Db db;
  saveOneRun(db.path);
  const std::string name = std::string(251, 'n');
  EXPECT_EQ(exportTo(db, "csv", db.dir + "/" + name + ".csv").code, 0);
#ifdef ATTNSCOPE_HAVE_GUI
  CliResult png = runCli({"export", "S1", "--format", "png", "--out", db.dir + "/" + name + ".png", "--db", db.path},
                         {"QT_QPA_PLATFORM=offscreen"});
  EXPECT_EQ(png.code, 0) << png.err;
#endif
  EXPECT_TRUE(hidden(db.dir).empty()) << hidden(db.dir).front();
}

TEST(StoreCliOutputs, TheFileSizeLimitIsAnErrorNotASilentDeath) {
  Db db;
  saveOneRun(db.path);
  const std::string out = db.dir + "/s1.csv";
  std::ofstream(out) << "old\n";
  CliResult r = runCliUnderLimit({"export", "S1", "--format", "csv", "--out", out, "--db", db.path}, RLIMIT_FSIZE, 100);
  EXPECT_EQ(r.code, 1) << "exit " << r.code << " (153 is death by SIGXFSZ)";
  EXPECT_TRUE(has(r.err, "cannot write " + out + ": File too large")) << r.err;
  EXPECT_EQ(readFile(out), "old\n");
  // A new database: a full disk's error and cleanup, no half-made file, no temporary with its journal.
  const std::string fresh = db.dir + "/new.sqlite";
  r = runCliUnderLimit({"run", "--backend", "cpu.reference", "--heads", "1", "--seq", "8", "--head-dim", "8", "--reps",
                        "1", "--warmup", "0", "--db", fresh},
                       RLIMIT_FSIZE, 20000);
  EXPECT_EQ(r.code, 1) << "exit " << r.code;
  EXPECT_TRUE(has(r.err, "cannot create " + fresh) && has(r.err, "disk is full") && has(r.err, "ulimit -f")) << r.err;
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_TRUE(hidden(db.dir).empty()) << hidden(db.dir).front();
}

}  // namespace
