#include "ui/chart_math.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace attnscope::ui {

namespace {

// Three significant digits, but never an exponent: 1.5, 12.3, 256, 1000.
std::string compactNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

}  // namespace

double niceByteStep(double range, int target_ticks) {
  if (!(range > 0) || target_ticks < 1) return 1;
  static const double mults[] = {1, 2, 5, 10, 20, 50, 100, 200, 500};
  for (double unit = 1; unit < 1e21; unit *= 1024)
    for (double m : mults)
      if (range / (m * unit) <= target_ticks) return m * unit;
  return std::pow(1024.0, 7);
}

std::vector<double> logByteTicks(double lo, double hi, int target_ticks) {
  std::vector<double> ticks;
  if (!(lo > 0) || !(hi >= lo)) return ticks;
  const int e0 = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
  const int e1 = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  if (e1 < e0) return ticks;
  // Strides of 10 land on whole units (1 KiB, 1 MiB, 1 GiB); smaller ones on 1-2-5 steps.
  static const int strides[] = {1, 2, 5, 10, 20, 30, 40, 50, 60};
  for (int stride : strides) {
    int first = e0;
    while (first % stride != 0) ++first;
    if (first > e1) continue;
    if ((e1 - first) / stride + 1 > std::max(target_ticks, 1) && stride != 60) continue;
    for (int e = first; e <= e1; e += stride) ticks.push_back(std::ldexp(1.0, e));
    break;
  }
  if (ticks.empty()) ticks.push_back(std::ldexp(1.0, e0));
  return ticks;
}

FlopsUnit flopsUnitFor(double max_flops) {
  static const std::pair<double, const char*> units[] = {
      {1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1e6, "MFLOP/s"}, {1e3, "kFLOP/s"}};
  for (const auto& [per, name] : units)
    if (max_flops >= per) return {per, name};
  return {1, "FLOP/s"};
}

std::string formatFlopsIn(double flops, const FlopsUnit& unit) {
  const double v = flops / unit.per_unit;
  char buf[48];
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof buf, a >= 100 ? "%.0f %s" : a >= 10 ? "%.1f %s" : a >= 1 ? "%.2f %s" : "%.3g %s", v,
                unit.name.c_str());
  return buf;
}

std::string formatByteTick(double bytes) {
  if (bytes == 0) return "0";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  const bool neg = bytes < 0;
  double v = std::fabs(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  std::string text = neg ? "-" : "";
  text += compactNumber(v);
  text += ' ';
  text += units[u];
  return text;
}

std::string formatTimeTick(double ns) {
  if (ns == 0) return "0";
  const double a = std::fabs(ns);
  const std::string sign = ns < 0 ? "-" : "";
  if (a < 1e3) return sign + compactNumber(a) + " ns";
  if (a < 1e6) return sign + compactNumber(a / 1e3) + " us";
  if (a < 1e9) return sign + compactNumber(a / 1e6) + " ms";
  return sign + compactNumber(a / 1e9) + " s";
}

double TimeToPixel::pixel(double t) const {
  if (t1 == t0) return px0;
  return px0 + (t - t0) * (px1 - px0) / (t1 - t0);
}

double TimeToPixel::time(double px) const {
  if (px1 == px0) return t0;
  return t0 + (px - px0) * (t1 - t0) / (px1 - px0);
}

double TimeToPixel::nsPerPixel() const {
  return px1 == px0 ? 0 : std::fabs((t1 - t0) / (px1 - px0));
}

std::pair<double, double> zoomRange(double lo, double hi, double anchor, double factor) {
  if (!(factor > 0)) return {lo, hi};
  return {anchor - (anchor - lo) * factor, anchor + (hi - anchor) * factor};
}

std::vector<Interval> mergeForPixels(const std::vector<Interval>& sorted, const TimeToPixel& map,
                                     double min_gap_px) {
  std::vector<Interval> out;
  const double lo = std::min(map.t0, map.t1), hi = std::max(map.t0, map.t1);
  const double gap = min_gap_px * map.nsPerPixel();
  // Intervals are sorted by start; skip to the first that can reach the visible range. Ends are
  // not sorted, so a long interval starting early is found by the linear scan below.
  for (const Interval& iv : sorted) {
    if (iv.start > hi) break;
    if (iv.end < lo) continue;
    if (!out.empty() && iv.start <= out.back().end + gap) {
      out.back().end = std::max(out.back().end, iv.end);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

std::string durationText(double s) {
  const double a = std::fabs(s);
  const char* unit = "s";
  double v = s;
  if (a < 1e-6) {
    v = s * 1e9;
    unit = "ns";
  } else if (a < 1e-3) {
    v = s * 1e6;
    unit = "\u00b5s";
  } else if (a < 1.0) {
    v = s * 1e3;
    unit = "ms";
  }
  char buf[48];
  const double av = std::fabs(v);
  // Rounding may carry into the next decade (999.7 -> "1000"): still three digits of that unit.
  std::snprintf(buf, sizeof buf, av >= 99.95 || unit[0] == 'n' ? "%.0f %s" : av >= 9.995 ? "%.1f %s" : "%.2f %s", v, unit);
  return buf;
}

std::string errorText(double error) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2e", error);
  return buf;
}

}  // namespace attnscope::ui
