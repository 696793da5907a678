#pragma once
// Human formatting shared by the CLI, the exporters and the GUI.

#include <cstdint>
#include <string>

namespace attnscope {

// 1536 -> "1.50 KiB"; exact bytes below 1 KiB ("512 B").
std::string formatBytes(int64_t bytes);
// Seconds -> "12.3 us", "4.56 ms", "1.23 s".
std::string formatDuration(double seconds);
// Flop/s -> "12.3 GFLOP/s", "1.23 TFLOP/s".
std::string formatFlops(double flops_per_second);

}  // namespace attnscope
