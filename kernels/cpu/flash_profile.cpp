#include "kernels/cpu/flash_profile.h"

#include <atomic>

namespace attnscope::cpu {
namespace {
std::atomic<bool> g_on{false};
std::atomic<long long> g_ns[4];
}  // namespace

void enableFlashProfile(bool on) { g_on.store(on, std::memory_order_relaxed); }
bool flashProfileEnabled() { return g_on.load(std::memory_order_relaxed); }

FlashTimeShares takeFlashProfile() {
  FlashTimeShares s;
  s.pack_s = static_cast<double>(g_ns[0].exchange(0)) * 1e-9;
  s.scores_s = static_cast<double>(g_ns[1].exchange(0)) * 1e-9;
  s.softmax_s = static_cast<double>(g_ns[2].exchange(0)) * 1e-9;
  s.output_s = static_cast<double>(g_ns[3].exchange(0)) * 1e-9;
  return s;
}

void addFlashProfile(long long pack_ns, long long scores_ns, long long softmax_ns, long long output_ns) {
  g_ns[0].fetch_add(pack_ns, std::memory_order_relaxed);
  g_ns[1].fetch_add(scores_ns, std::memory_order_relaxed);
  g_ns[2].fetch_add(softmax_ns, std::memory_order_relaxed);
  g_ns[3].fetch_add(output_ns, std::memory_order_relaxed);
}

}  // namespace attnscope::cpu
