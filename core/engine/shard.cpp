#include "core/engine/shard.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <stdexcept>

#include "core/engine/run_engine.h"

namespace attnscope {
namespace {

bool parseInt(std::string_view text, long long& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::optional<ShardSpec> parseShard(std::string_view text, std::string* problem) {
  const size_t slash = text.find('/');
  long long k = 0, n = 0;
  if (slash == std::string_view::npos || !parseInt(text.substr(0, slash), k) || !parseInt(text.substr(slash + 1), n)) {
    if (problem) *problem = "'" + std::string(text) + "' is not K/N (e.g. 0/4: the first of four shards)";
    return std::nullopt;
  }
  if (n < 1 || n > kMaxShards) {
    if (problem) *problem = "N must be 1 to " + std::to_string(kMaxShards) + ", not " + std::to_string(n);
    return std::nullopt;
  }
  if (k < 0 || k >= n) {
    if (problem) *problem = "K must be 0 to " + std::to_string(n - 1) + " (shards count from 0), not " + std::to_string(k);
    return std::nullopt;
  }
  return ShardSpec{static_cast<int>(k), static_cast<int>(n)};
}

double pointCost(const WorkloadSpec& spec) {
  // About the flops of a small point: its inputs, plan and check cost about this much.
  constexpr double kSetUp = 5e7;
  return pointFlops(spec) + kSetUp;
}

std::vector<int> assignShards(const std::vector<double>& costs, int count) {
  if (count < 1) throw std::invalid_argument("a sweep splits into at least one shard");
  std::vector<size_t> order(costs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<size_t>(count), 0.0);
  std::vector<int> out(costs.size(), 0);
  for (size_t i : order) {
    const auto lightest = std::min_element(load.begin(), load.end());  // the first of equal loads
    out[i] = static_cast<int>(lightest - load.begin());
    *lightest += costs[i];
  }
  return out;
}

std::vector<size_t> shardPoints(const SweepSpec& spec, ShardSpec shard, const std::vector<size_t>& among) {
  std::vector<SpecError> errors;
  const std::vector<WorkloadSpec> grid = spec.expand(&errors);
  if (!errors.empty()) throw std::invalid_argument(describe(errors));
  const size_t backends = spec.backends.size();
  const size_t total = grid.size() * backends;
  std::vector<size_t> candidates = among;
  if (candidates.empty()) {
    candidates.resize(total);
    std::iota(candidates.begin(), candidates.end(), size_t{0});
  }
  std::vector<double> costs;
  costs.reserve(candidates.size());
  for (size_t p : candidates) {
    if (p >= total)
      throw std::invalid_argument("points: point " + std::to_string(p) + " is not in this sweep (it has " +
                                  std::to_string(total) + " points, 0 to " + std::to_string(total ? total - 1 : 0) + ")");
    costs.push_back(pointCost(grid[p / backends]));
  }
  const std::vector<int> assigned = assignShards(costs, shard.count);
  std::vector<size_t> out;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (assigned[i] == shard.index) out.push_back(candidates[i]);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::vector<size_t>> parsePointList(std::string_view text, std::string* problem) {
  std::vector<size_t> out;
  auto fail = [&](const std::string& why) -> std::optional<std::vector<size_t>> {
    if (problem) *problem = why;
    return std::nullopt;
  };
  if (text.empty()) return fail("no points given (e.g. 0,3,5-9)");
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = text.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    long long lo = 0, hi = 0;
    const bool ok = dash == std::string_view::npos
                        ? parseInt(part, lo) && (hi = lo, true)
                        : parseInt(part.substr(0, dash), lo) && parseInt(part.substr(dash + 1), hi);
    if (!ok || lo < 0 || hi < lo) return fail("'" + std::string(part) + "' is not a point index or a range A-B (A <= B)");
    if (!out.empty() && static_cast<size_t>(lo) <= out.back())
      return fail("points must ascend without repeats ('" + std::string(part) + "' after " + std::to_string(out.back()) + ")");
    if (hi - lo >= static_cast<long long>(kMaxSweepPoints) || out.size() + static_cast<size_t>(hi - lo) >= kMaxSweepPoints)
      return fail("more than " + std::to_string(kMaxSweepPoints) + " points");
    for (long long p = lo; p <= hi; ++p) out.push_back(static_cast<size_t>(p));
    pos = comma + 1;
  }
  return out;
}

std::string formatPointList(const std::vector<size_t>& points) {
  std::string out;
  for (size_t i = 0; i < points.size();) {
    size_t j = i;
    while (j + 1 < points.size() && points[j + 1] == points[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(points[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(points[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace attnscope
