#pragma once
// What every CLI test shares: a fresh folder and database per test (run() appends --db), and the
// check of a usage error (exit 2, each fragment of the message on stderr).
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "tests/support/cli_process.h"

class CliFixture : public ::testing::Test {
 protected:
  explicit CliFixture(std::string tag) : tag_(std::move(tag)) {}
  void SetUp() override {
    dir_ = tempDir(tag_);
    db_ = dir_ + "/runs.sqlite";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  CliResult run(std::vector<std::string> args) {
    args.push_back("--db");
    args.push_back(db_);
    return runCli(args);
  }
  std::string tag_, dir_, db_;
};

inline void expectUsageError(const CliResult& r, std::initializer_list<std::string> fragments) {
  EXPECT_EQ(r.code, 2) << r.err;
  for (const auto& f : fragments) EXPECT_NE(r.err.find(f), std::string::npos) << "stderr lacks '" << f << "': " << r.err;
}
