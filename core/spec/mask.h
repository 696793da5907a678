#pragma once
// Mask semantics shared by every backend and the reference; see workload_spec.h for the rules.

#include <cstdint>
#include <vector>

#include "core/spec/workload_spec.h"

namespace attnscope {

// The half-open key range [begin, end) a query may see under a structured mask (none, causal,
// window, block); dense masks restrict further element by element. begin >= end: no key.
struct KeyRange {
  int64_t begin = 0;
  int64_t end = 0;
};
KeyRange visibleKeys(const MaskSpec& mask, int64_t i, int64_t seq_q, int64_t seq_kv);

// Whether query i may attend key j under a structured mask (dense masks: see denseMaskValue).
bool maskAllows(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv);

// The dense mask element for (b, h, i, j), drawn with the mask's keep-probability from the seed.
// Broadcast layouts ignore b and h. Deterministic: any element can be computed on its own.
bool denseMaskValue(const WorkloadSpec& spec, int64_t b, int64_t h, int64_t i, int64_t j);

// The whole dense mask tensor, 1 byte per element (1 = attend), [1,1,Lq,Lkv] or [B,H,Lq,Lkv].
std::vector<uint8_t> makeDenseMask(const WorkloadSpec& spec);

// The additive mask element for (b, h, i, j) as the mask tensor holds it: a bias uniform in
// [-1, 1) from the seed, rounded to spec.maskDType(), or -inf where the element is dropped. An
// element is dropped exactly where dense:p (same seed, same layout) would be false, so additive:p
// hides the keys dense:p hides. Broadcast layouts ignore b and h. Deterministic, like
// denseMaskValue.
float additiveMaskValue(const WorkloadSpec& spec, int64_t b, int64_t h, int64_t i, int64_t j);

// The whole additive mask as float values (each already rounded to maskDType()), [1,1,Lq,Lkv] or
// [B,H,Lq,Lkv] flattened; core/inputs/host_inputs stores it in maskDType() itself.
std::vector<float> makeAdditiveMask(const WorkloadSpec& spec);

// (query, key) pairs a kernel computes per (batch, head) for throughput: every pair for none,
// dense and additive, half for causal (the usual convention), the pairs actually visible for window and block.
double computedPairsPerHead(const WorkloadSpec& spec);
// Forward flops: 4 * B * H * pairs * D.
double forwardFlops(const WorkloadSpec& spec);

}  // namespace attnscope
