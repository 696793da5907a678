#include "kernels/cpu/tile_kernels.h"

#include <atomic>
#include <string>

namespace attnscope::cpu {

const TileKernels& tileKernels(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return kTileKernelsBaseline;
#if defined(__x86_64__)
    case CpuIsa::avx2: return kTileKernelsAvx2;
    case CpuIsa::avx512: return kTileKernelsAvx512;
    case CpuIsa::avx512_bf16: return kTileKernelsAvx512Bf16;
#else  // never chosen: cpuSupports says no for every x86 variant
    default: return kTileKernelsBaseline;
#endif
  }
  return kTileKernelsBaseline;
}

namespace {
std::atomic<const TileKernels*> g_testing{nullptr};
}  // namespace

const TileKernels& activeTileKernels() {
  if (const TileKernels* k = g_testing.load(std::memory_order_relaxed)) return *k;
  return tileKernels(activeCpuIsa());
}

void setTileKernelsForTesting(const TileKernels* kernels) { g_testing.store(kernels); }

std::string cpuKernelDescription() {
  if (const std::string problem = cpuIsaProblem(); !problem.empty()) return "cpu kernels: none (" + problem + ")";
  const CpuIsa isa = activeCpuIsa();
  std::string s = "cpu kernels: " + std::string(tileKernels(isa).name) + " (own";
  if (isa != bestCpuIsa()) s += "; forced, the CPU's best is " + std::string(toString(bestCpuIsa()));
  return s + "); CPU features: " + cpuFeatureList();
}

}  // namespace attnscope::cpu
