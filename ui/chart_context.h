#pragma once
// The line of context every chart carries: what was held fixed across the runs it shows (every
// field of the spec table in its words: model width or head_dim, dtype, mask and its layout,
// batch, scale, seed, ...), the backends and the sweeps. A chart pasted into a report without it
// cannot be read: "D8" says nothing about "width 64 = heads x head_dim".

#include <string>
#include <vector>

#include "core/spec/workload_spec.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// "S3 default · train · batch 1 · width 64 = heads x head_dim · fp32 · mask none · cpu.reference,
// cpu.flash": each field's words (SpecField::wordsText, in table order) that all the runs share;
// fields that vary between the runs are left out (the series labels name them). No sweeps: a hint
// saying how to get some.
std::string chartContext(const SweepSnapshots& sweeps);

// A workload in words, for the report's cover: "train, batch 1, width 64 = heads x head_dim, fp32,
// mask none", every field but the sweep's `axes` (their values are listed with the axes).
std::string workloadInWords(const WorkloadSpec& spec, const std::vector<std::string>& axes = {});

// One run in words, for the per-run charts: "R12 cpu.reference: batch 1, heads 16, seq 2048,
// head_dim 4, width 64 = heads x head_dim, fp32, mask none".
std::string runInWords(const RunResult& run);

// What the sweeps show, in a few lines for the report's opening: the largest peak and its run,
// the backends side by side at the largest point (peaks and the ratio of the largest to the
// smallest), and the points that did not run ok by status ("every point ran ok" otherwise).
std::vector<std::string> sweepFindings(const SweepSnapshots& sweeps);

// The run with that id among the sweeps' runs; nullptr when none.
const RunResult* findRun(const SweepSnapshots& sweeps, int64_t run_id);

}  // namespace attnscope::ui
