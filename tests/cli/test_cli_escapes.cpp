// Names typed by a user reach the terminal through `runs` and `show`: every C0 control, DEL and
// the C1 controls (UTF-8 0xc2 0x80..0x9f, e.g. CSI 0xc2 0x9b, which some terminals obey like
// ESC [) are printed as \xNN. Written after hand mutations of app/cli_table.cpp that dropped the
// DEL and the C1 cases survived the store's own test, which covers ESC and BEL only.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/cli_process.h"

namespace {

TEST(CliEscapes, DelAndC1ControlsInANameAreEscaped) {
  const std::string dir = tempDir("escapes");
  const std::string db = dir + "/runs.sqlite";
  const std::string name = std::string("del\x7f csi\xc2\x9b") + "31m nel\xc2\x85 ok\xc3\xa9";
  CliResult saved = runCli({"run", "--backend", "cpu.reference", "--heads", "1", "--seq", "8", "--head-dim", "8",
                            "--reps", "1", "--warmup", "0", "--name", name, "--db", db});
  ASSERT_EQ(saved.code, 0) << saved.err;
  for (const auto& args : std::vector<std::vector<std::string>>{{"runs", "--db", db}, {"show", "S1", "--db", db}}) {
    CliResult r = runCli(args);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x7f'), std::string::npos) << args[0];
    EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << args[0];
    EXPECT_EQ(r.out.find("\xc2\x85"), std::string::npos) << args[0];
    EXPECT_NE(r.out.find("del\\x7f csi\\xc2\\x9b31m nel\\xc2\\x85"), std::string::npos) << r.out;
    // Printable UTF-8 (é) is left alone.
    EXPECT_NE(r.out.find("ok\xc3\xa9"), std::string::npos) << r.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
