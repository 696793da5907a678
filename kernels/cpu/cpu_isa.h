#pragma once
// Which instruction set the CPU backends' own tile kernels use. Chosen at run time from the
// CPU's feature bits (never from a list of known models): the widest variant the CPU and the
// OS support, unless ATTNSCOPE_CPU_ISA (or setCpuIsaOverride, for tests and bench_cpu) forces
// a narrower one. Every variant is compiled into every x86-64 build.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::cpu {

enum class CpuIsa {
  baseline,     // x86-64 (SSE2): runs anywhere
  avx2,         // AVX2 + FMA, F16C for fp16 conversion
  avx512,       // AVX-512 F/BW/VL/DQ
  avx512_bf16,  // avx512 plus AVX512_BF16 dot products (vdpbf16ps) for bf16 tiles
  amx_bf16,     // avx512_bf16 with its bf16 products on AMX tiles (tdpbf16ps), once a self-check passed
};

// Narrowest first.
inline constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512, CpuIsa::avx512_bf16,
                                         CpuIsa::amx_bf16};

std::string_view toString(CpuIsa isa);
std::optional<CpuIsa> parseCpuIsa(std::string_view text);

// Whether this CPU (and OS) can run the variant. For amx_bf16: CPUID's AMX-TILE and AMX-BF16,
// avx512_bf16, Linux's permission for the tile data (arch_prctl) and a self-check of the AMX
// products against avx512_bf16's, all done once per process on the first call that needs them.
bool cpuSupports(CpuIsa isa);

// Why a CPU whose CPUID has AMX does not get amx_bf16 ("AMX: not permitted by the kernel
// (arch_prctl: ...)", "AMX switched off: self-check ... differs by ..."); empty when AMX is in
// use or the CPU simply lacks it.
std::string amxProblem();

// The widest variant this CPU supports.
CpuIsa bestCpuIsa();

// The variant in use: the override when one is set, else ATTNSCOPE_CPU_ISA when set, else
// bestCpuIsa(). Throws std::invalid_argument with a one-line reason when the requested variant
// is unknown or this CPU lacks it (the backends report that as the reason they cannot run).
CpuIsa activeCpuIsa();

// The reason activeCpuIsa() would throw, or empty.
std::string cpuIsaProblem();

// Forces a variant for this process (nullopt: back to the environment / the CPU's best). Not
// thread-safe against running backends: set it between runs.
void setCpuIsaOverride(std::optional<CpuIsa> isa);

// What this CPU lacks for the variant: its missing feature bits ("amx-tile amx-bf16"), or for
// amx_bf16 on a CPU with them, amxProblem(); empty where cpuSupports(isa).
std::string cpuIsaMissing(CpuIsa isa);

// The CPU's relevant feature bits, e.g. "avx2 fma f16c" or "avx512f avx512bw ... avx512bf16 amx-tile amx-bf16".
std::string cpuFeatureList();

}  // namespace attnscope::cpu
