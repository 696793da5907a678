#pragma once
// Shared by the CPU backend tests: a compact way to write specs, and both backends on one pool.

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/spec/workload_spec.h"
#include "kernels/cpu/cpu_flash_backend.h"
#include "kernels/cpu/cpu_reference_backend.h"

namespace attnscope::cputest {

struct Shape {
  int64_t batch = 1, heads = 1, kv_heads = 0, seq_q = 1, seq_kv = 0, head_dim = 64;
  DType dtype = DType::fp32;
  std::string mask = "none";
  MaskLayout layout = MaskLayout::broadcast;
  uint64_t seed = 1;
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
  return spec;
}

// gtest prints parameters with it.
inline void PrintTo(const Shape& s, std::ostream* os) { *os << summary(specOf(s)); }

// Both CPU backends, sharing a pool of `threads` workers (0: hardware concurrency).
inline std::vector<std::unique_ptr<Backend>> cpuBackends(int threads = 0) {
  auto pool = std::make_shared<cpu::TaskPool>(threads);
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(std::make_unique<cpu::CpuReferenceBackend>(pool));
  b.push_back(std::make_unique<cpu::CpuFlashBackend>(pool));
  return b;
}

}  // namespace attnscope::cputest
