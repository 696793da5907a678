// The store's side of the real attnscope binary: exports that must not touch the database,
// standard output, option ranges, `check`, names printed safely, and the GUI and the CLI on one
// database (the GUI offscreen, started as a real process).
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/store/store_cli_support.h"

namespace {

TEST(StoreCli, ExportNeverOverwritesTheDatabase) {
  Db db;
  saveOneRun(db.path);
  const std::string before = readFile(db.path);
  std::filesystem::create_directory(db.dir + "/sub");
  for (const std::string& out : {db.path, db.dir + "/sub/../runs.sqlite"}) {
    CliResult r = runCli({"export", "S1", "--format", "csv", "--out", out, "--db", db.path});
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("is the database"), std::string::npos) << r.err;
  }
  const std::string other = db.dir + "/other.sqlite";
  saveOneRun(other);
  CliResult r = runCli({"export", "S1", "--format", "json", "--out", other, "--db", db.path});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is an AttnScope database"), std::string::npos) << r.err;
  EXPECT_TRUE(readFile(db.path) == before);
  EXPECT_EQ(runCli({"runs", "--db", db.path}).code, 0);
}

TEST(StoreCli, ExportToStandardOutputAndItsLimits) {
  Db db;
  saveOneRun(db.path);
  CliResult csv = runCli({"export", "S1", "--format", "csv", "--out", "-", "--db", db.path});
  EXPECT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("sweep_id,", 0) == 0 || csv.out.find(",backend,") != std::string::npos, true) << csv.out;
  EXPECT_FALSE(std::filesystem::exists("-"));
  CliResult json = runCli({"export", "R1", "--format", "json", "--out", "-", "--db", db.path});
  EXPECT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(json.out.front(), '{');
  CliResult png = runCli({"export", "S1", "--format", "png", "--out", "-", "--db", db.path});
  EXPECT_EQ(png.code, 2);
  EXPECT_NE(png.err.find("give png a file name"), std::string::npos) << png.err;
  CliResult dpi = runCli({"export", "S1", "--format", "png", "--dpi", "10", "--out", db.dir + "/a.png", "--db", db.path});
  EXPECT_EQ(dpi.code, 2);
  EXPECT_NE(dpi.err.find("--dpi must be between 24 and 2400 (got 10)"), std::string::npos) << dpi.err;
  CliResult missing = runCli({"export", "S1", "--format", "csv", "--out", db.dir + "/no/such/x.csv", "--db", db.path});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
}

TEST(StoreCli, ExportAtAPrintedSize) {
  Db db;
  saveOneRun(db.path);
  // Checked in every build, before anything is drawn.
  CliResult bad = runCli({"export", "S1", "--format", "png", "--size", "7x", "--out", db.dir + "/a.png", "--db", db.path});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--size must be WxH with a unit in, mm, cm, pt or px"), std::string::npos) << bad.err;
  CliResult both = runCli({"export", "S1", "--format", "png", "--size", "7x3in", "--width", "900", "--out",
                           db.dir + "/a.png", "--db", db.path});
  EXPECT_EQ(both.code, 2);
  EXPECT_NE(both.err.find("drop --width/--height, or --size"), std::string::npos) << both.err;
  CliResult huge = runCli({"export", "S1", "--format", "pdf", "--size", "6000x100mm", "--out", db.dir + "/a.pdf", "--db", db.path});
  EXPECT_EQ(huge.code, 2) << huge.err;
#ifndef ATTNSCOPE_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (ATTNSCOPE_GUI=OFF), so it has no image export";
#endif
  // 183 mm (a journal page's width) at 300 DPI: 2161 px; the PNG says 300 DPI.
  const std::string png = db.dir + "/page.png";
  CliResult r = runCli({"export", "S1", "--format", "png", "--size", "183x90mm", "--dpi", "300", "--out", png, "--db", db.path});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string bytes = readFile(png);
  ASSERT_GT(bytes.size(), 24u);
  auto be32 = [&](size_t at) {
    return (uint32_t(uint8_t(bytes[at])) << 24) | (uint32_t(uint8_t(bytes[at + 1])) << 16) |
           (uint32_t(uint8_t(bytes[at + 2])) << 8) | uint32_t(uint8_t(bytes[at + 3]));
  };
  EXPECT_EQ(be32(16), 2161u);  // IHDR width
  EXPECT_EQ(be32(20), 1063u);  // 90 mm
  const size_t phys = bytes.find("pHYs");
  ASSERT_NE(phys, std::string::npos);
  EXPECT_EQ(be32(phys + 4), 11811u);  // 300 DPI in dots per metre
  // A PDF of 7 x 3.5 in is a page of 504 x 252 points.
  const std::string pdf = db.dir + "/page.pdf";
  r = runCli({"export", "S1", "--format", "pdf", "--size", "7x3.5in", "--out", pdf, "--db", db.path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(readFile(pdf).find("MediaBox [0 0 504"), std::string::npos);
}

TEST(StoreCli, ImageExportPrintsNoQtWarnings) {
  // Under cron, ssh -T or a container XDG_RUNTIME_DIR is unset, and Qt used to warn about it on
  // the first stderr line of every image export.
#ifndef ATTNSCOPE_HAVE_GUI
  GTEST_SKIP() << "this build has no GUI (ATTNSCOPE_GUI=OFF), so it has no image export";
#endif
  Db db;
  saveOneRun(db.path);
  for (const char* format : {"png", "svg", "pdf"}) {
    const std::string out = db.dir + "/chart." + format;
    CliResult r = runCli({"export", "S1", "--format", format, "--out", out, "--db", db.path}, {"XDG_RUNTIME_DIR="});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.err, "") << format;
    EXPECT_GT(std::filesystem::file_size(out), 100u) << format;
  }
  for (const auto& e : std::filesystem::directory_iterator(db.dir))
    EXPECT_EQ(e.path().filename().string().find(".attnscope-"), std::string::npos) << e.path();
}

TEST(StoreCli, CsvExportIsWrittenWholeUnderATemporaryName) {
  Db db;
  saveOneRun(db.path);
  const std::string out = db.dir + "/s1.csv";
  CliResult r = runCli({"export", "S1", "--format", "csv", "--out", out, "--db", db.path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(readFile(out).empty());
  for (const auto& e : std::filesystem::directory_iterator(db.dir))
    EXPECT_EQ(e.path().filename().string().find(".attnscope-"), std::string::npos) << e.path();
}

TEST(StoreCli, DbThatIsAFolderOrATextFileIsBadInput) {
  Db db;
  CliResult folder = runCli({"runs", "--db", db.dir});
  EXPECT_EQ(folder.code, 2);
  EXPECT_NE(folder.err.find("is a folder"), std::string::npos) << folder.err;
  const std::string text = db.dir + "/notes.txt";
  std::ofstream(text) << "not a database, just some notes that are long enough to be a page or so\n";
  for (const auto& args : std::vector<std::vector<std::string>>{{"runs", "--db", text},
                                                                {"run", "--backend", "cpu.reference", "--db", text},
                                                                {"run", "--backend", "cpu.reference", "--db", db.dir}}) {
    CliResult r = runCli(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(StoreCli, CheckCommand) {
  Db db;
  saveOneRun(db.path);
  CliResult ok = runCli({"check", "--db", db.path});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_NE(ok.out.find(": ok (1 sweeps, 1 runs"), std::string::npos) << ok.out;
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(db.path.c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "UPDATE sweeps SET spec = '{' WHERE id = 1", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  CliResult bad = runCli({"check", "--db", db.path});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("damaged, 1 problem"), std::string::npos) << bad.out;
  CliResult runs = runCli({"runs", "--db", db.path});
  EXPECT_EQ(runs.code, 1);
  EXPECT_NE(runs.out.find("S1"), std::string::npos) << runs.out;
  EXPECT_NE(runs.err.find("sweep S1 spec is not valid JSON"), std::string::npos) << runs.err;
  EXPECT_EQ(runs.err.find("[json.exception"), std::string::npos) << runs.err;
  const std::string text = db.dir + "/notes.txt";
  std::ofstream(text) << std::string(300, 'x');
  EXPECT_EQ(runCli({"check", "--db", text}).code, 2);
  EXPECT_EQ(runCli({"check", "--help"}).code, 0);
}

TEST(StoreCli, NamesArePrintedWithControlCharactersEscaped) {
  Db db;
  saveOneRun(db.path, "evil \x1b]2;pwned\x07 \x1b[31mred");
  for (const auto& args : std::vector<std::vector<std::string>>{{"runs", "--db", db.path}, {"show", "S1", "--db", db.path}}) {
    CliResult r = runCli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args[0];
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << args[0];
    EXPECT_NE(r.out.find("evil \\x1b]2;pwned\\x07"), std::string::npos) << r.out;
  }
}

TEST(StoreCli, WriteCommandsCheckWritabilityBeforeRunning) {
  Db db;
  saveOneRun(db.path);
  ASSERT_EQ(::chmod(db.path.c_str(), 0444), 0);
  std::vector<std::string> env;
  // As root permission bits do not bind; the command runs as nobody then.
  CliResult r = geteuid() == 0 ? CliResult{} : runCli({"run", "--backend", "cpu.reference", "--db", db.path});
  if (geteuid() == 0) {
    ::chmod(db.dir.c_str(), 0777);
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(90);
      // A checkout in a private folder (mktemp -d makes it 0700) keeps nobody from the binary:
      // never unwind through this forked copy of the test (its destructors are the parent's).
      if (access(ATTNSCOPE_BIN, X_OK) != 0) _exit(77);
      CliResult c;
      try {
        c = runCli({"run", "--backend", "cpu.reference", "--db", db.path});
      } catch (...) {
        _exit(91);
      }
      bool early = c.err.find("read-only") != std::string::npos && c.out.empty();
      _exit(c.code == 2 && early ? 0 : 10 + c.code);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
      GTEST_SKIP() << "user nobody cannot reach " << ATTNSCOPE_BIN << " (a folder above it is private), so the "
                   << "read-only refusal cannot be tried without root's privileges";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  } else {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "the workload ran: " << r.out;
  }
  for (const char* suffix : {"-wal", "-shm"}) EXPECT_FALSE(std::filesystem::exists(db.path + suffix));
}

}  // namespace
