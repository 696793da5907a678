#pragma once
// Shared by the CPU backend tests: specs written compactly (tests/support/spec_builder.h), and both
// backends on one pool.

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/backend/backend.h"
#include "core/spec/workload_spec.h"
#include "kernels/cpu/cpu_flash_backend.h"
#include "kernels/cpu/cpu_reference_backend.h"
#include "tests/support/spec_builder.h"

namespace attnscope::cputest {

using test::Shape;
using test::specOf;

// Both CPU backends, sharing a pool of `threads` workers (0: hardware concurrency).
inline std::vector<std::unique_ptr<Backend>> cpuBackends(int threads = 0) {
  auto pool = std::make_shared<cpu::TaskPool>(threads);
  std::vector<std::unique_ptr<Backend>> b;
  b.push_back(std::make_unique<cpu::CpuReferenceBackend>(pool));
  b.push_back(std::make_unique<cpu::CpuFlashBackend>(pool));
  return b;
}

}  // namespace attnscope::cputest
