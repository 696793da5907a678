#pragma once
// Counter-based random numbers: element `index` of stream `stream` under `seed` is computable on
// its own, so inputs and dense masks are reproducible on any device and in any order.

#include <cstdint>

namespace attnscope {

// grad_out: G of the train pass's loss sum(O * G). mask_bias: an additive mask's values. x .. b_o: a kind = layer workload's input and
// weights (docs/ARCHITECTURE.md, the layer contract).
enum class RandomStream : uint64_t {
  q = 1, k = 2, v = 3, mask = 4, sample = 5, grad_out = 6,
  x = 7, w_qkv = 8, b_qkv = 9, w_o = 10, b_o = 11,
  mask_bias = 12  // an additive mask's bias; which elements it drops is the mask stream's, as dense's
};

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t randomBits(uint64_t seed, RandomStream stream, uint64_t index) {
  return splitmix64(splitmix64(seed * 0x100000001b3ull + static_cast<uint64_t>(stream)) ^ index);
}

// Uniform in [0, 1) with 53 bits.
inline double uniform01(uint64_t seed, RandomStream stream, uint64_t index) {
  return static_cast<double>(randomBits(seed, stream, index) >> 11) * 0x1.0p-53;
}

}  // namespace attnscope
