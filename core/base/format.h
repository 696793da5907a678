#pragma once
// Human formatting shared by the CLI, the exporters and the GUI.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attnscope {

// 1536 -> "1.50 KiB"; exact bytes below 1 KiB ("512 B").
std::string formatBytes(int64_t bytes);
// "8GiB", "512MiB", "1.5e9", "16GB", "1000000" -> bytes (binary units KiB..TiB and K, M, G;
// decimal KB..TB), as a double so that the caller says what is too large. nullopt for anything
// else: a negative or non-finite number, an unknown unit, blanks before it.
std::optional<double> parseByteSize(const std::string& text);
// A figure's size as printed: "7x3.5in", "183x90mm", "12x6cm", "504x252pt" or "1600x700px"
// (pixels at dpi) -> inches, width then height. nullopt for anything else, a side of 0 or less,
// or a side over 200 inches.
struct PrintSize {
  double width_in = 0, height_in = 0;
};
std::optional<PrintSize> parsePrintSize(const std::string& text, int dpi);
inline constexpr const char* kPrintSizeForms = "WxH with a unit in, mm, cm, pt or px, e.g. 7x3.5in or 183x90mm";
// Seconds -> "12.3 us", "4.56 ms", "1.23 s".
std::string formatDuration(double seconds);
// Flop/s -> "12.3 GFLOP/s", "1.23 TFLOP/s".
std::string formatFlops(double flops_per_second);
// `text` without leading and trailing blanks (space, tab, CR, LF).
std::string trimmed(std::string_view text);
// Milliseconds since the epoch in local time: "2026-12-02 03:43:32".
std::string formatLocalTime(int64_t unix_ms);

// The pieces appended into one string: concat("heads ", std::to_string(h)). GCC 12 warns falsely
// on `"literal" + std::string` chains (-Warray-bounds).
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

}  // namespace attnscope
