#pragma once
// A WorkloadSpec in one expression, for every test area: the shape and what differs from the
// defaults, e.g. specOf({.batch = 2, .heads = 4, .seq_q = 97, .head_dim = 59, .mask = "causal"}).
// The one spec builder of the tests; areas wrap it with their own defaults where they have some.

#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "core/spec/mask.h"
#include "core/spec/workload_spec.h"

namespace attnscope::test {

struct Shape {
  int64_t batch = 1, heads = 1, kv_heads = 0, seq_q = 1, seq_kv = 0, head_dim = 64;
  DType dtype = DType::fp32;
  std::string mask = "none";
  MaskLayout layout = MaskLayout::broadcast;
  uint64_t seed = 1;
  std::optional<DType> mask_dtype{};  // additive masks: nullopt is q's dtype
};

inline WorkloadSpec specOf(const Shape& s) {
  WorkloadSpec spec;
  spec.batch = s.batch;
  spec.heads = s.heads;
  spec.kv_heads = s.kv_heads;
  spec.seq_q = s.seq_q;
  spec.seq_kv = s.seq_kv;
  spec.head_dim = s.head_dim;
  spec.dtype = s.dtype;
  ParsedMask m = parseMask(s.mask);
  if (!m.mask) throw std::invalid_argument("bad mask in test: " + s.mask);
  spec.mask = *m.mask;
  spec.mask_layout = s.layout;
  spec.seed = s.seed;
  spec.mask_dtype = s.mask_dtype;
  return spec;
}

// gtest prints parameters with it.
inline void PrintTo(const Shape& s, std::ostream* os) { *os << summary(specOf(s)); }

}  // namespace attnscope::test
