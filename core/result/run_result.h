#pragma once
// The outcome of one (spec, backend) point: plain values, safe to copy across threads.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/check/accuracy.h"
#include "core/backend/memory_plan.h"
#include "core/trace/trace_event.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// wrong: the run finished but its output failed the accuracy check (or was not finite); it is a
// failed run everywhere: exit 1, excluded from ok counts, drawn as failed.
enum class RunStatus { ok, unsupported, oom, error, cancelled, skipped, wrong };
std::string_view toString(RunStatus s);
std::optional<RunStatus> parseRunStatus(std::string_view s);

struct Timing {
  int warmup = 0;
  int reps = 0;
  double median_s = 0;
  double min_s = 0;
  double max_s = 0;
  std::vector<double> samples_s;
};

struct MemoryFigures {
  int64_t predicted_peak = -1;  // plan(spec).peakBytes()
  int64_t measured_peak = -1;   // the tracking allocator's peak
  int64_t cupti_peak = -1;      // CUPTI's device-memory peak, -1 when not captured
  int64_t io_bytes = 0;         // Q + K + V + O + mask (train: + G, dQ, dK, dV; layer: x, weights, y, ...)
  int64_t available = -1;       // memory the device had available before the run
  int64_t overhead() const { return measured_peak >= 0 ? measured_peak - io_bytes : -1; }
};

struct RunResult {
  int64_t id = 0;  // store id, 0 until saved
  WorkloadSpec spec;
  std::string backend;
  std::string device;
  RunStatus status = RunStatus::ok;
  std::string message;  // why, for anything but ok; warnings for ok
  Timing timing;
  double flops = 0;  // forward flops of the spec (core/spec/mask.h)
  double flopsPerSecond() const { return timing.median_s > 0 ? flops / timing.median_s : 0; }
  MemoryFigures memory;
  MemoryPlan plan;
  Accuracy accuracy;
  Trace trace;
  // What the backend reported about itself for this run (RunContext::setFact), e.g. for PyTorch
  // "torch.ran" (the kernel SDPA ran), "torch" (version), "torch.cuda", "torch.cudnn",
  // "torch.device", "torch.capability", "python". Empty for in-process backends.
  std::map<std::string, std::string> facts;
  int64_t started_unix_ms = 0;
  double wall_s = 0;  // whole point, set-up and checks included
  // Identity across databases (schema 6): the run's UUID (set when it is first saved), its index
  // in its sweep's grid of points x backends (SweepRunner's order; -1 unknown: saved before schema
  // 6), and the store id of the environment that ran it (0: the sweep's). A merge keeps all three,
  // so shards of one sweep recombine and each point keeps the machine that ran it.
  std::string uuid;
  int64_t point_index = -1;
  int64_t environment_id = 0;
};

// The status for people: "ok" only when the check held every row, else "ok, checked 3 % of
// rows" or "ok, not checked"; any other status as toString.
std::string statusText(const RunResult& r);

// One rank of a tensor-parallel run (spec.tp > 1), from the facts the torch backends store:
// tp.ranks, and per rank tp.rank<r>.peak_bytes, .seconds (median of its timed calls) and
// .comm_share (its comm phases' share of its time, 0..1); -1 where a fact is missing or unreadable.
struct RankStats {
  int rank = 0;
  int64_t peak_bytes = -1;
  double seconds = -1;
  double comm_share = -1;
};
// Every rank in order, empty for a run without tp.ranks.
std::vector<RankStats> rankStats(const RunResult& r);

// Without the trace (it is stored and exported separately).
nlohmann::json toJson(const RunResult& r);
RunResult runResultFromJson(const nlohmann::json& j);

}  // namespace attnscope
