#pragma once
// The line of context every chart carries: what was held fixed across the runs it shows (model
// width or head_dim, dtype, mask and its layout, batch), the backends and the sweeps. A chart
// pasted into a report without it cannot be read: "D8" says nothing about "width 64 / 8 heads".

#include <string>

#include "core/spec/workload_spec.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// "S3 default · width 64 (head_dim = 64 / heads) · fp32 · mask none · batch 1 · cpu.reference,
// cpu.flash", with "train, checkpoint attention" (kind, pass, checkpoint when not the default)
// after the sweep. Fields that vary between the runs are left out (the series labels name them).
// No sweeps: a hint saying how to get some.
std::string chartContext(const SweepSnapshots& sweeps);

// The fixed part of a workload in words, for the report's cover: "batch 1, width 64 (head_dim =
// 64 / heads), fp32, mask none", led by kind, pass and checkpoint when not the default ("layer,
// train, batch 1, ..."). heads and seq are left to the sweep axes.
std::string workloadInWords(const WorkloadSpec& spec);

// One run in words, for the per-run charts: "R12 cpu.reference: heads 16, seq 2048, width 64
// (head_dim 4), fp32, mask none, batch 1", then kind, pass and checkpoint when not the default
// (", train, checkpoint attention").
std::string runInWords(const RunResult& run);

// The run with that id among the sweeps' runs; nullptr when none.
const RunResult* findRun(const SweepSnapshots& sweeps, int64_t run_id);

}  // namespace attnscope::ui
