// The split of a sweep into shards (sweep --shard K/N, the tasks of a Slurm array): every point in
// exactly one shard, deterministic, balanced by predicted cost; and the point lists resume writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "core/engine/shard.h"

namespace attnscope {
namespace {

SweepSpec grid() {
  SweepSpec s;
  s.axes = {{"heads", {"1", "2", "4", "8"}}, {"seq", {"64", "256", "1024"}}};
  s.backends = {"cpu.reference", "cpu.flash"};
  return s;
}

void expectEveryPointOnce(const SweepSpec& spec, const std::vector<size_t>& among, size_t total) {
  for (int n = 1; n <= 7; ++n) {
    SCOPED_TRACE("N = " + std::to_string(n));
    std::map<size_t, int> seen;
    for (int k = 0; k < n; ++k) {
      const auto points = shardPoints(spec, {k, n}, among);
      EXPECT_TRUE(std::is_sorted(points.begin(), points.end()));
      EXPECT_EQ(points, shardPoints(spec, {k, n}, among)) << "not deterministic";
      for (size_t p : points) ++seen[p];
    }
    EXPECT_EQ(seen.size(), among.empty() ? total : among.size());
    for (const auto& [p, count] : seen) EXPECT_EQ(count, 1) << "point " << p;
    for (size_t p : among) {
      EXPECT_EQ(seen.count(p), 1u) << p;
    }
  }
}

TEST(Shard, EveryPointInExactlyOneShardForOneToSevenShards) {
  const SweepSpec spec = grid();
  ASSERT_EQ(spec.pointCount(), 24u);
  expectEveryPointOnce(spec, {}, 24);
}

TEST(Shard, AGridWithLeftOutPointsIsNumberedAsItRuns) {
  // pass x checkpoint leaves out forward with a checkpoint: 3 grid points of 4, x 2 backends.
  SweepSpec spec;
  spec.base.kind = WorkloadKind::layer;
  spec.axes = {{"pass", {"forward", "train"}}, {"checkpoint", {"none", "attention"}}};
  spec.backends = {"cpu.reference", "cpu.flash"};
  ASSERT_EQ(spec.pointCount(), 6u);
  expectEveryPointOnce(spec, {}, 6);
  EXPECT_THROW(shardPoints(spec, {0, 1}, {6}), std::invalid_argument);
}

TEST(Shard, OnlyThePointsGivenAreSplit) {
  expectEveryPointOnce(grid(), {1, 2, 3, 10, 17, 23}, 24);
}

TEST(Shard, UnequalCostsAreBalancedNotDealtRoundRobin) {
  // One point costs as much as all the others: it gets a shard to itself.
  const std::vector<double> costs = {1, 1, 1, 1, 8, 1, 1, 1, 1};
  const auto a = assignShards(costs, 2);
  EXPECT_EQ(a[4], 0);
  for (size_t i = 0; i < costs.size(); ++i) {
    if (i != 4) {
      EXPECT_EQ(a[i], 1) << i;
    }
  }
  // The real grid: the shards' predicted costs are within one point's cost of each other.
  const SweepSpec spec = grid();
  std::vector<WorkloadSpec> points = spec.expand();
  for (int n = 2; n <= 5; ++n) {
    std::vector<double> load(static_cast<size_t>(n), 0.0);
    double largest = 0;
    for (int k = 0; k < n; ++k)
      for (size_t p : shardPoints(spec, {k, n})) {
        const double c = pointCost(points[p / spec.backends.size()]);
        load[static_cast<size_t>(k)] += c;
        largest = std::max(largest, c);
      }
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, largest) << "N = " << n;
  }
  // Costs grow with seq and heads: the most expensive point is not with the next most expensive.
  const auto shard0 = shardPoints(spec, {0, 2});
  const auto shard1 = shardPoints(spec, {1, 2});
  const bool p22_in_0 = std::count(shard0.begin(), shard0.end(), 22u) > 0;  // heads 8, seq 1024, cpu.reference
  const bool p23_in_0 = std::count(shard0.begin(), shard0.end(), 23u) > 0;
  EXPECT_NE(p22_in_0, p23_in_0);
  EXPECT_EQ(shard0.size() + shard1.size(), 24u);
}

TEST(Shard, KOverNIsParsedWithPreciseErrors) {
  std::string problem;
  auto s = parseShard("2/5", &problem);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 5);
  EXPECT_FALSE(parseShard("5/5", &problem));
  EXPECT_NE(problem.find("K must be 0 to 4"), std::string::npos) << problem;
  EXPECT_FALSE(parseShard("0/0", &problem));
  EXPECT_NE(problem.find("N must be 1"), std::string::npos) << problem;
  for (const char* bad : {"", "3", "a/b", "1/2/3", "-1/2", "1 /2"}) EXPECT_FALSE(parseShard(bad, &problem)) << bad;
}

TEST(Shard, PointListsRoundTrip) {
  std::string problem;
  const std::vector<size_t> points = {0, 1, 2, 3, 7, 9, 10, 15};
  EXPECT_EQ(formatPointList(points), "0-3,7,9,10,15");
  auto back = parsePointList(formatPointList(points), &problem);
  ASSERT_TRUE(back) << problem;
  EXPECT_EQ(*back, points);
  EXPECT_FALSE(parsePointList("3,2", &problem));
  EXPECT_NE(problem.find("ascend"), std::string::npos);
  EXPECT_FALSE(parsePointList("1,1", &problem));
  EXPECT_FALSE(parsePointList("5-2", &problem));
  EXPECT_FALSE(parsePointList("", &problem));
  EXPECT_FALSE(parsePointList("0-999999999", &problem));
}

}  // namespace
}  // namespace attnscope
