#pragma once
// Turns the runs of one or more sweeps into chart series: one per backend, and per value of
// every other varying spec field (so a heads x seq sweep plotted against heads gets one series
// per seq value). Pure data; the chart widgets only draw what this returns.
//
// Forward vs train and the checkpoint modes are read at a glance: when pass varies it is the line
// pattern, when checkpoint varies it is the marker, and the colour (one hue per backend, a shade
// per value) tells the remaining fields apart. The legend then names each colour once
// (colour_label) and a key names the patterns and markers, so a train sweep's legend is a third
// as long and no entry needs cutting.

#include <cstdint>
#include <string>
#include <vector>

#include "core/result/run_result.h"
#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// What a chart's x axis is: heads and seq always have a chart; layers (a stack's depth) and tp
// (tensor-parallel ranks) have one where the runs shown differ in them.
enum class XField { heads, seq, layers, tp };
const char* xFieldName(XField x);  // "heads", "seq", "layers", "tp"
double xValue(const WorkloadSpec& spec, XField x);

struct SeriesPoint {
  double x = 0;
  int64_t predicted = -1;  // bytes, -1 unknown
  int64_t measured = -1;   // bytes, -1 unless ok
  RunStatus status = RunStatus::ok;
  double median_s = 0;
  double flops_per_s = 0;
  const RunResult* run = nullptr;  // into the snapshot the series was built from
};

struct PlotSeries {
  std::string backend;
  std::string label;    // "cpu.flash pass=train seq=1024", or "S3: cpu.flash" for sweeps alike
  // The label less what line pattern and marker encode ("cpu.flash seq=1024"): the legend's
  // entry for this colour. Equal to label when nothing is encoded.
  std::string colour_label;
  int variant = 0;      // index among the colours of the same backend (shade)
  int variant_count = 1;
  // Line pattern and marker indices (kLineStyles, kMarkers in series_plot) and what they encode:
  // "pass=train" and "checkpoint=layer"; empty where they tell overlaid sweeps apart instead.
  int line = 0;
  int marker = 0;
  std::string line_key;
  std::string marker_key;
  size_t sweep = 0;     // index of its sweep among those shown (line style and marker in overlays)
  std::vector<SeriesPoint> points;  // sorted by x
};

// Builds the series of several sweeps (labels are prefixed by the sweep id, S<n>, when two series of
// different sweeps would otherwise read the same). The snapshots must outlive the result (points
// point into their runs).
std::vector<PlotSeries> buildSeries(const SweepSnapshots& sweeps, XField x);

// For maps over heads x seq (the Heatmap): each run's other varying fields as a label, in the
// field table's order ("pass=train checkpoint=attention"), empty when nothing else varies in the
// sweep. Parallel to sweep.runs. Runs with different labels never share a map's cell.
std::vector<std::string> mapVariants(const SweepSnapshot& sweep);

// Distinct x values (heads, seq, layers or tp) present in the runs, sorted.
std::vector<int64_t> distinctValues(const SweepSnapshots& sweeps, XField x);

// The memory a point shows: measured peak when ok, else the predicted peak.
int64_t shownPeak(const RunResult& r);

}  // namespace attnscope::ui
