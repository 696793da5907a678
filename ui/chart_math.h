#pragma once
// Chart arithmetic kept out of the widgets so it can be tested with data tables: byte axis
// ticks and labels, time axis labels, time-to-pixel mapping, zoom, and merging of timeline
// intervals to pixel resolution.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::ui {

// A linear byte-axis step: m * 1024^k with m in {1, 2, 5, 10, 20, 50, 100, 200, 500}, the
// smallest giving at most target_ticks steps over range. Non-positive range: 1.
double niceByteStep(double range, int target_ticks);

// Log byte-axis ticks: powers of two in [lo, hi], every 2^stride-th so that at most about
// target_ticks remain; lo and hi must be > 0.
std::vector<double> logByteTicks(double lo, double hi, int target_ticks);

// Compact tick label: "0", "512 B", "1 KiB", "1.5 MiB", "12 GiB" (at most 3 significant digits).
std::string formatByteTick(double bytes);

// One throughput unit for a whole axis or table column, picked from its largest value so that
// numbers read 1..999 ("TFLOP/s" from 1e12 up, then GFLOP/s, MFLOP/s, kFLOP/s, FLOP/s).
struct FlopsUnit {
  double per_unit = 1e12;
  std::string name = "TFLOP/s";
};
FlopsUnit flopsUnitFor(double max_flops_per_s);
// "12.3 GFLOP/s" in the given unit: 3 significant digits, never an exponent above 1.
std::string formatFlopsIn(double flops_per_s, const FlopsUnit& unit);

// Nanoseconds as a compact axis label: "0", "250 ns", "1.5 us", "12 ms", "2 s".
std::string formatTimeTick(double ns);
// A duration as the window shows it: three significant digits always ("20.0 ms" beside
// "18.7 ms", "123 us" -> "123 µs"), ns / µs / ms / s.
std::string durationText(double seconds);
// An accuracy error in one form: "8.71e-08", "1.00e-07" (never "1e-07").
std::string errorText(double error);

// Maps times [t0, t1] onto pixels [px0, px1] (either may be reversed).
struct TimeToPixel {
  double t0 = 0, t1 = 1;
  double px0 = 0, px1 = 1;
  double pixel(double t) const;
  double time(double px) const;
  double nsPerPixel() const;
};

// Zooms [lo, hi] by factor (< 1 zooms in) keeping anchor at the same relative place.
std::pair<double, double> zoomRange(double lo, double hi, double anchor, double factor);

struct Interval {
  double start = 0;
  double end = 0;
  bool operator==(const Interval&) const = default;
};

// Merges intervals (sorted by start) that overlap or lie within min_gap_px of each other once
// mapped to pixels, and drops those outside [map.t0, map.t1]. A million kernels on a 1000 px
// lane become at most about 1000 rectangles, and no busy time disappears.
std::vector<Interval> mergeForPixels(const std::vector<Interval>& sorted, const TimeToPixel& map,
                                     double min_gap_px = 1.0);

}  // namespace attnscope::ui
