#pragma once
// Where cpu.flash spends its time, for bench_cpu: thread time summed over workers in the four
// parts of a key tile (packing K and V, the S = Q K^T product, the online softmax, the P V
// product). Off by default; when off it costs one relaxed atomic load per key tile.

namespace attnscope::cpu {

struct FlashTimeShares {
  double pack_s = 0, scores_s = 0, softmax_s = 0, output_s = 0;
  double total() const { return pack_s + scores_s + softmax_s + output_s; }
};

void enableFlashProfile(bool on);
bool flashProfileEnabled();
// The sums since the last call, then reset.
FlashTimeShares takeFlashProfile();
// Called by the flash kernel (nanoseconds of one worker).
void addFlashProfile(long long pack_ns, long long scores_ns, long long softmax_ns, long long output_ns);

}  // namespace attnscope::cpu
