#include "core/format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

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

bool isValidUtf8(std::string_view text) {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    int extra = 0;
    uint32_t cp = 0, min = 0;
    if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07, min = 0x10000;
    else return false;
    if (i + static_cast<size_t>(extra) >= n) return false;  // cut short
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + static_cast<size_t>(k)]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

}  // namespace attnscope
