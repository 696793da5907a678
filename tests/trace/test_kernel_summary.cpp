// Kernel summary: grouping by name and launch configuration, totals, means, ordering, JSON.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/trace/kernel_summary.h"
#include "tests/trace/trace_builders.h"

using namespace attnscope;
using namespace attnscope::testing;

namespace {
TraceEvent kernel(const std::string& name, int64_t start, int64_t dur, int grid_x, int regs = 32) {
  TraceEvent e = activity(EventKind::kernel, name, start, start + dur, 7);
  e.kernel.grid[0] = grid_x;
  e.kernel.grid[1] = 2;
  e.kernel.block[0] = 128;
  e.kernel.registers = regs;
  e.kernel.static_smem = 1024;
  e.kernel.dynamic_smem = 49152;
  return e;
}
}  // namespace

TEST(KernelSummary, GroupsByNameAndConfiguration) {
  std::vector<TraceEvent> ev = {kernel("attn", 0, 10, 64),   kernel("attn", 100, 20, 64), phase("compute", 0, 500),
                                kernel("gemm", 200, 100, 8), kernel("attn", 400, 30, 64), kernel("attn", 450, 5, 32),
                                activity(EventKind::memcpy, "HtoD", 0, 1000, 7)};
  auto rows = summarizeKernels(ev);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "gemm");
  EXPECT_EQ(rows[0].count, 1);
  EXPECT_EQ(rows[1].name, "attn");
  EXPECT_EQ(rows[1].count, 3);
  EXPECT_EQ(rows[1].total_ns, 60);
  EXPECT_DOUBLE_EQ(rows[1].meanNs(), 20.0);
  EXPECT_EQ(rows[1].min_ns, 10);
  EXPECT_EQ(rows[1].max_ns, 30);
  EXPECT_EQ(rows[1].config.grid[0], 64);
  EXPECT_EQ(rows[1].config.grid[1], 2);
  EXPECT_EQ(rows[1].config.block[0], 128);
  EXPECT_EQ(rows[1].config.registers, 32);
  EXPECT_EQ(rows[1].sharedMemory(), 1024 + 49152);
  EXPECT_EQ(rows[2].name, "attn");
  EXPECT_EQ(rows[2].config.grid[0], 32);
  EXPECT_EQ(rows[2].total_ns, 5);

  auto j = toJson(rows);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[1]["name"], "attn");
  EXPECT_EQ(j[1]["count"], 3);
  EXPECT_EQ(j[1]["total_ns"], 60);
  EXPECT_DOUBLE_EQ(j[1]["mean_ns"].get<double>(), 20.0);
  EXPECT_EQ(j[1]["grid"], nlohmann::json({64, 2, 0}));
  EXPECT_EQ(j[1]["block"], nlohmann::json({128, 0, 0}));
  EXPECT_EQ(j[1]["registers"], 32);
  EXPECT_EQ(j[1]["dynamic_smem"], 49152);
  EXPECT_EQ(j[1]["source"], "cupti");
}

TEST(KernelSummary, NoKernelsNoRows) {
  EXPECT_TRUE(summarizeKernels({phase("x", 0, 1)}).empty());
  EXPECT_TRUE(toJson(std::vector<KernelStats>{}).empty());
}
