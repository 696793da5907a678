#pragma once
// What a sampled accuracy check always holds, and the seeded rest. A sample is a set of flat
// indices g * per_group + t over `groups` groups (batch-heads x query rows, KV heads x key rows,
// batches x positions, weight rows); whatever else it takes, a sampled check takes
//   - one seeded index in every block of kCheckBlock indices of every group (so every
//     batch-head and every query block, the last partial one included, is represented),
//   - the mask's edges in every group: where a row's visible key range (a key's range of rows
//     that see it) changes its step: the first row that sees a key and the last that sees none,
//     where a window stops being clipped by key 0, the first and last rows of each block (at most
//     4 edges per block of kCheckBlock rows); for a dense mask the row with the fewest and the
//     row with the most visible keys,
//   - the index with the largest norm (|q|, |k|, |x|, ...) in every group and the kCheckLargest
//     largest overall,
//   - every index the caller marks at risk (a query whose largest possible score is so large that
//     float32 rounding of the scores alone could exceed the tolerance),
//   - the first and last index and seeded ones, as many as the budget allows.
// Written from the user guide's mask table like referenceAttends (core/check/reference.h), which the
// ranges here are tested against; nothing is shared with the backends.

#include <cstdint>
#include <set>
#include <vector>

#include "core/inputs/host_inputs.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

inline constexpr int64_t kCheckBlock = 64;
inline constexpr int64_t kCheckLargest = 8;

// The visible keys of query i [lo, hi] (empty: lo > hi) under a structured mask (none, dense and
// additive: every key), and the rows that see key j.
struct IndexRange {
  int64_t lo = 0, hi = -1;
  bool empty() const { return lo > hi; }
  int64_t size() const { return empty() ? 0 : hi - lo + 1; }
  bool operator==(const IndexRange&) const = default;
};
IndexRange keysSeenBy(const MaskSpec& mask, int64_t i, int64_t seq_q, int64_t seq_kv);
IndexRange rowsSeeing(const MaskSpec& mask, int64_t j, int64_t seq_q, int64_t seq_kv);

// Query pairs (i, j) a structured mask lets through, summed over one head; for a dense or additive
// mask keep_prob x Lq x Lkv.
double visiblePairsPerHead(const WorkloadSpec& spec);

// The edges of a structured mask: query rows (keys = false) or key rows (keys = true), at most 4
// per block of kCheckBlock; empty for none, dense and additive.
std::vector<int64_t> maskEdges(const WorkloadSpec& spec, bool keys);
// A dense mask's edges in one mask head (0 for a broadcast mask, b * H + h per head): the query
// row (or key) with the fewest and the one with the most visible pairs.
std::vector<int64_t> denseMaskEdges(const WorkloadSpec& spec, const std::vector<uint8_t>& mask, int64_t mask_head,
                                    bool keys);
// What an additive mask that drops keys (keep_prob < 1) keeps, as denseMaskEdges reads a dense
// mask: 1 byte per element in its layout, 1 where the value is not -inf. Empty for any other mask.
std::vector<uint8_t> keptByAdditiveMask(const WorkloadSpec& spec, const HostInputs& inputs);
// The bits denseMaskEdges reads for the spec's mask tensor: the dense mask's own, an additive
// mask's from keptByAdditiveMask (held in `scratch`), empty when no element is dropped.
const std::vector<uint8_t>& keptByMaskTensor(const WorkloadSpec& spec, const HostInputs& inputs,
                                             std::vector<uint8_t>& scratch);

// Squared norms of `rows` rows of D elements from row `first` (rows < 0: to the end).
std::vector<double> rowNorms(const HostTensor& t, int64_t D, int64_t first = 0, int64_t rows = -1);

class CheckSample {
 public:
  CheckSample(int64_t groups, int64_t per_group, uint64_t seed, uint64_t salt);

  int64_t total() const { return groups_ * per_; }
  int64_t size() const { return static_cast<int64_t>(chosen_.size()); }
  bool complete() const { return size() == total(); }

  void all();
  void everyBlock();
  void inEveryGroup(const std::vector<int64_t>& ts);
  void inGroup(int64_t g, const std::vector<int64_t>& ts);
  void add(int64_t index) { chosen_.insert(index); }
  // norms: one per index (total()); the largest of every group and kCheckLargest overall.
  void largest(const std::vector<double>& norms);
  // `n` more indices: the first and last (when not in yet), then seeded ones.
  void seeded(int64_t n);
  std::vector<int64_t> sorted() const { return {chosen_.begin(), chosen_.end()}; }

 private:
  int64_t groups_, per_;
  uint64_t seed_, salt_;
  std::set<int64_t> chosen_;
};

}  // namespace attnscope
