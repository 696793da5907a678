#pragma once
// What the tests of the real binary on a database share: a fresh folder and database, and one
// tiny saved run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/cli_process.h"

struct Db {
  std::string dir = tempDir("store-cli");
  std::string path = dir + "/runs.sqlite";
  ~Db() { std::filesystem::remove_all(dir); }
};

// One tiny saved run (cpu.reference, a 1x1x8x8 workload) in sweep S1.
inline void saveOneRun(const std::string& db, const std::string& name = "tiny") {
  CliResult r = runCli({"run", "--backend", "cpu.reference", "--heads", "1", "--seq", "8", "--head-dim", "8", "--reps", "1",
                        "--warmup", "0", "--name", name, "--db", db});
  ASSERT_EQ(r.code, 0) << r.err;
}
