#pragma once
// Which points of a sweep one shard runs (`attnscope sweep --shard K/N`, the tasks of a Slurm
// array). A sweep's points are its grid points x backends in SweepRunner's order, numbered from 0:
// the global point index every shard stores with each run, so the shards of one sweep recombine
// exactly (`attnscope merge`).
//
// The split is balanced by predicted cost, deterministically: points are taken from the most
// expensive down (ties by index) and each goes to the shard with the least cost so far (ties: the
// lowest shard), the longest-processing-time rule. Round robin would give shard 0 every largest
// point of a grid whose costs grow along its innermost axis; this keeps the tasks of one array
// within one point's cost of each other, so the array ends when its slowest task does, soon after
// the rest. The same spec and N always give the same split on every machine.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/spec/sweep_spec.h"

namespace attnscope {

struct ShardSpec {
  int index = 0;  // K, 0-based (Slurm's $SLURM_ARRAY_TASK_ID)
  int count = 1;  // N
};

// The largest N: more tasks than this is not a shard, it is a mistake.
inline constexpr int kMaxShards = 100000;

// "K/N" with 0 <= K < N <= kMaxShards; nullopt and *problem (without the option's name) otherwise.
std::optional<ShardSpec> parseShard(std::string_view text, std::string* problem);

// The predicted cost of one point: its flops (RunEngine's count, backward and projections
// included) plus a fixed set-up cost, so a grid of tiny points splits by count.
double pointCost(const WorkloadSpec& spec);

// For each cost, the shard (0..count-1) it goes to, by the rule above.
std::vector<int> assignShards(const std::vector<double>& costs, int count);

// The global point indexes (ascending) of `spec` that shard runs, chosen among `among` (every
// point when empty). std::invalid_argument when the spec does not expand or an index is out of
// range.
std::vector<size_t> shardPoints(const SweepSpec& spec, ShardSpec shard, const std::vector<size_t>& among = {});

// "3,7,12-15": a list of point indexes and ranges (ascending, no repeats), as `--points` reads it
// and `slurm resume` writes it. nullopt and *problem otherwise.
std::optional<std::vector<size_t>> parsePointList(std::string_view text, std::string* problem);
std::string formatPointList(const std::vector<size_t>& points);

}  // namespace attnscope
