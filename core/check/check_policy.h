#pragma once
// How much of a run the float64 accuracy check holds against the reference (`--check`):
//   auto     every row when the full check costs about as much as the run itself (checkEveryRow),
//            else the sampled check; the default
//   full     every row of every tensor, whatever it costs
//   sampled  the rows that matter (core/check/check_sample.h) plus a seeded sample within
//            kAccuracyBudget products
//   off      no check: the run is stored as not checked, never as checked and passed
// The mode belongs to the sweep (SweepSpec::check) and to one `run`; what a run's check covered is
// its Accuracy (rows_checked of rows_total), shown wherever the run is shown as ok.

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/spec/check_mode.h"
#include "core/spec/workload_spec.h"

namespace attnscope {

// What one check does once the mode is resolved.
enum class CheckDepth { sampled, every_row };

// The sampled check's budget in key x head_dim products for its seeded part (each forward row
// costs Lkv x D of them), beside the rows it always holds.
inline constexpr int64_t kAccuracyBudget = int64_t{1} << 26;
inline constexpr int64_t kAccuracyAllRows = 4096;  // the sampled check takes every row up to this many, budget permitting
inline constexpr int64_t kAccuracySamples = 256;   // otherwise at most this many seeded rows

// Float64 multiply-adds per second of one thread of the check (core/check/reference*.cpp), measured
// on the development machine (docs/ARCHITECTURE.md, "Accuracy"); the check runs on
// checkThreads() threads.
inline constexpr double kCheckProductsPerSecond = 1.0e9;
// A check at most this many products (about 20 ms) is always full, whatever the run took.
inline constexpr double kAlwaysFullProducts = 1 << 25;
// auto checks every row when the full check's estimated time is at most this share of the run's
// own time (its warm-up and timed passes).
inline constexpr double kFullCheckShare = 1.0;

// The threads the check uses: every CPU this process may run on.
int checkThreads();

// Float64 multiply-adds of the full check of `spec`: the output and, for pass = train, the
// gradients; for kind = layer every stage.
double fullCheckProducts(const WorkloadSpec& spec);

// auto: every row when fullCheckProducts is at most kAlwaysFullProducts, or its estimated time
// (kCheckProductsPerSecond on `threads` threads) is at most kFullCheckShare x `run_seconds`.
CheckDepth resolveCheck(const WorkloadSpec& spec, CheckMode mode, double run_seconds, int threads = checkThreads());

}  // namespace attnscope
