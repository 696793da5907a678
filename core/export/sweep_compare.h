#pragma once
// Point-by-point comparison of two or more sweeps: the one pairing rule that `attnscope compare`
// and the GUI's Compare tab share.
//
// Points pair on the backend and on the spec fields that are swept (that vary inside any of the
// sweeps), by their canonical JSON names, so an alias (kv-heads, head-dim, seq_q) can never give
// a second key that makes points overwrite each other. Fields that differ only between the sweeps
// (fp16 in one, bf16 in the other; another width) are what is being compared: they are listed in
// `differing_fields` and do not stop points pairing. A point found in only some sweeps is kept,
// absent (nullptr) in the others.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result/run_result.h"

namespace attnscope {

struct PointKeyValue {
  std::string field;   // canonical name: "heads", "seq", "kv_heads", ...
  std::string text;    // as written in the spec's JSON
  double number = 0;   // for numeric order; 0 for text fields
  bool numeric = false;
};

struct ComparedPoint {
  std::string backend;
  std::vector<PointKeyValue> key;      // one per key field, in SweepComparison::key_fields order
  std::string label;                   // "cpu.flash heads=8 seq=1024"
  std::vector<const RunResult*> runs;  // one per sweep; nullptr where the sweep lacks the point
};

struct SweepComparison {
  std::vector<std::string> key_fields;        // swept fields, in spec field order
  std::vector<std::string> differing_fields;  // fixed fields whose value differs between sweeps
  // Per differing field, its value in each sweep (as written in the spec's JSON; "" for a sweep
  // without runs): "dtype: fp16 in S1, bf16 in S2" above a comparison.
  std::vector<std::vector<std::string>> differing_values;
  std::vector<ComparedPoint> points;          // by backend (first seen), then key values in numeric order
};

// sweeps: the runs of each sweep (pointers must outlive the result, which points into them).
// When a sweep holds two runs with one key (a field swept that is not a spec field, e.g. reps),
// the first is kept.
SweepComparison compareSweeps(const std::vector<const std::vector<RunResult>*>& sweeps);

// The spec fields (canonical names, seed left out) whose values differ between a and b.
std::vector<std::string> differingFields(const WorkloadSpec& a, const WorkloadSpec& b);
// Why runs of a and b cannot be compared point for point (another kind: an attention call
// against a whole layer is different work, so a ratio of their time or memory means nothing),
// or nothing when they can.
std::optional<std::string> notComparable(const WorkloadSpec& a, const WorkloadSpec& b);

// B/A per point: measured peak and median time of sweep b over sweep a; nullopt unless both
// runs exist, finished ok, have a positive A value and are comparable (notComparable).
std::optional<double> peakRatio(const ComparedPoint& p, size_t a, size_t b);
std::optional<double> timeRatio(const ComparedPoint& p, size_t a, size_t b);

// The torch environment a sweep's torch runs saw (python, torch, torch.cuda, torch.cudnn,
// torch.device, torch.capability as torch reports them), from its first torch run: stored with
// each run, not with the sweep's environment. Empty when the sweep ran no torch backend.
std::map<std::string, std::string> torchEnvironment(const std::vector<RunResult>& runs);

// The kernel torch ran for this run ("flash", "math", ...); empty for other backends.
std::string torchRan(const RunResult& run);

}  // namespace attnscope
