#pragma once
#include <chrono>
#include <cstdint>

namespace attnscope {
// Monotonic nanoseconds; the time base of every host-side event.
inline int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace attnscope
