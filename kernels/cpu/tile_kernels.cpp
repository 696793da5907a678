#include "kernels/cpu/tile_kernels.h"

#include <atomic>
#include <string>

namespace attnscope::cpu {
namespace {

#if defined(__x86_64__)
// avx512_bf16 with its pair products on AMX tiles; everything else (packing, fp32 products,
// softmax rows) is avx512_bf16's own code, so the two variants differ in gemm_pairs only.
TileKernels amxBf16Kernels() {
  TileKernels k = kTileKernelsAvx512Bf16;
  k.isa = CpuIsa::amx_bf16;
  k.name = "avx512f+avx512_bf16+amx_bf16";
  k.gemm_pairs = gemmPairsAmx;
  return k;
}
#endif

}  // namespace

const TileKernels& tileKernels(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return kTileKernelsBaseline;
#if defined(__x86_64__)
    case CpuIsa::avx2: return kTileKernelsAvx2;
    case CpuIsa::avx512: return kTileKernelsAvx512;
    case CpuIsa::avx512_bf16: return kTileKernelsAvx512Bf16;
    case CpuIsa::amx_bf16: {
      // Built on first use, after every table's constant initialisation.
      static const TileKernels amx = amxBf16Kernels();
      return amx;
    }
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
  s += "); CPU features: " + cpuFeatureList();
  if (const std::string amx = amxProblem(); !amx.empty()) s += "; " + amx;
  return s;
}

}  // namespace attnscope::cpu
