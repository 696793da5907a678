#include "core/base/format.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace attnscope {

std::string formatBytes(int64_t bytes) {
  if (bytes < 0) return "-" + formatBytes(-bytes);
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

std::string formatDuration(double s) {
  char buf[32];
  double a = std::fabs(s);
  if (a < 1e-6) std::snprintf(buf, sizeof buf, "%.0f ns", s * 1e9);
  else if (a < 1e-3) std::snprintf(buf, sizeof buf, "%.3g us", s * 1e6);
  else if (a < 1.0) std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string formatFlops(double f) {
  char buf[32];
  if (f >= 1e12) std::snprintf(buf, sizeof buf, "%.3g TFLOP/s", f / 1e12);
  else if (f >= 1e9) std::snprintf(buf, sizeof buf, "%.3g GFLOP/s", f / 1e9);
  else std::snprintf(buf, sizeof buf, "%.3g MFLOP/s", f / 1e6);
  return buf;
}

std::string formatLocalTime(int64_t unix_ms) {
  std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string trimmed(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  const size_t e = text.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string() : std::string(text.substr(b, e - b + 1));
}

std::optional<double> parseByteSize(const std::string& text) {
  static const std::pair<const char*, double> units[] = {
      {"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}};
  // strtod would skip leading whitespace; values are taken as written.
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || v < 0) return std::nullopt;
  const std::string unit(end);
  for (const auto& [name, mult] : units)
    if (unit == name) return v * mult;
  return std::nullopt;
}

std::optional<PrintSize> parsePrintSize(const std::string& text, int dpi) {
  static const std::pair<const char*, double> units[] = {{"in", 1.0}, {"mm", 1 / 25.4}, {"cm", 1 / 2.54},
                                                          {"pt", 1 / 72.0}, {"px", 0}};
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || dpi <= 0) return std::nullopt;
  char* end = nullptr;
  const double w = std::strtod(text.c_str(), &end);
  if (*end != 'x' || !std::isdigit(static_cast<unsigned char>(end[1]))) return std::nullopt;
  const char* h_start = end + 1;
  const double h = std::strtod(h_start, &end);
  if (end == h_start || !std::isfinite(w) || !std::isfinite(h) || w <= 0 || h <= 0) return std::nullopt;
  const std::string unit(end);
  for (const auto& [name, per] : units) {
    if (unit != name) continue;
    const double f = per > 0 ? per : 1.0 / dpi;
    const PrintSize out{w * f, h * f};
    if (out.width_in > 200 || out.height_in > 200) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

}  // namespace attnscope
