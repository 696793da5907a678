#pragma once
// The machine's own arithmetic limit, per instruction set: a loop of independent multiply-adds
// kept in registers (no loads, no stores), run on `threads` threads at once, so bench_cpu can say
// what share of it each point reaches. One figure per variant this CPU runs:
//   fp32 FMA (avx2)         vfmadd on 8 floats,   16 flops per instruction
//   fp32 FMA (avx512)       vfmadd on 16 floats,  32 flops per instruction
//   bf16 dot (avx512_bf16)  vdpbf16ps, 32 products summed pairwise into 16 floats, 64 flops
//   bf16 tiles (amx_bf16)   tdpbf16ps, 16 x 16 floats += 16 x 32 by 32 x 16 bf16, 16384 flops

#include <string>
#include <vector>

#include "kernels/cpu/cpu_isa.h"

namespace attnscope::bench {

struct PeakRate {
  std::string what;    // "fp32 FMA (avx512)"
  cpu::CpuIsa isa;     // the variant it needs
  double flops_per_s;  // all threads together, best of three
};

// Every variant this CPU runs (x86-64; none elsewhere).
std::vector<PeakRate> measurePeaks(int threads);
// One variant's rate, best of three; 0 where the CPU cannot run it. A shared machine only ever
// makes a measurement lower than the truth, so bench_cpu keeps the best it has seen.
double measurePeak(int threads, cpu::CpuIsa isa);

}  // namespace attnscope::bench
