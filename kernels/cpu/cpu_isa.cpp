#include "kernels/cpu/cpu_isa.h"

#include <atomic>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>

#include "kernels/cpu/tile_kernels.h"

namespace attnscope::cpu {
namespace {

// -1: no override; else the CpuIsa value.
std::atomic<int> g_override{-1};

#if defined(__x86_64__) && defined(__GNUC__)
// __builtin_cpu_supports checks the CPUID bits and, for AVX and AVX-512, that the OS saves the
// wider registers (XCR0).
bool has(const char* feature) {
  __builtin_cpu_init();
  if (std::string_view(feature) == "avx2") return __builtin_cpu_supports("avx2");
  if (std::string_view(feature) == "fma") return __builtin_cpu_supports("fma");
  if (std::string_view(feature) == "f16c") return __builtin_cpu_supports("f16c");
  if (std::string_view(feature) == "avx512f") return __builtin_cpu_supports("avx512f");
  if (std::string_view(feature) == "avx512bw") return __builtin_cpu_supports("avx512bw");
  if (std::string_view(feature) == "avx512vl") return __builtin_cpu_supports("avx512vl");
  if (std::string_view(feature) == "avx512dq") return __builtin_cpu_supports("avx512dq");
  if (std::string_view(feature) == "avx512bf16") return __builtin_cpu_supports("avx512bf16");
  if (std::string_view(feature) == "avx512fp16") return __builtin_cpu_supports("avx512fp16");
  // For AMX, also that XCR0 enables the tile state; Linux's permission is asked separately.
  if (std::string_view(feature) == "amx-tile") return __builtin_cpu_supports("amx-tile");
  if (std::string_view(feature) == "amx-bf16") return __builtin_cpu_supports("amx-bf16");
  return false;
}
#else
bool has(const char*) { return false; }
#endif

constexpr const char* kFeatures[] = {"avx2",       "fma",        "f16c",     "avx512f",  "avx512bw", "avx512vl",
                                     "avx512dq",   "avx512bf16", "avx512fp16", "amx-tile", "amx-bf16"};

// CPUID (and XCR0) has what amx_bf16 needs; whether it may be used is amxUse()'s to say.
bool cpuHasAmx() { return cpuSupports(CpuIsa::avx512_bf16) && has("amx-tile") && has("amx-bf16"); }

std::string allowedList() {
  std::string s;
  for (CpuIsa i : kAllCpuIsas) s += (s.empty() ? "" : ", ") + std::string(toString(i));
  return s;
}

std::string supportedList() {
  std::string s;
  for (CpuIsa i : kAllCpuIsas)
    if (cpuSupports(i)) s += (s.empty() ? "" : ", ") + std::string(toString(i));
  return s;
}

// "is not supported by this CPU; it supports: ..." and, for amx_bf16 on a CPU with AMX, why not.
std::string unsupported(CpuIsa isa) {
  std::string s = "is not supported by this CPU; it supports: " + supportedList();
  if (isa == CpuIsa::amx_bf16 && !amxProblem().empty()) s += " (" + amxProblem() + ")";
  return s;
}

}  // namespace

std::string_view toString(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return "baseline";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::avx512: return "avx512";
    case CpuIsa::avx512_bf16: return "avx512_bf16";
    case CpuIsa::amx_bf16: return "amx_bf16";
  }
  return "?";
}

std::optional<CpuIsa> parseCpuIsa(std::string_view text) {
  for (CpuIsa i : kAllCpuIsas)
    if (text == toString(i)) return i;
  return std::nullopt;
}

bool cpuSupports(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::baseline: return true;
    case CpuIsa::avx2: return has("avx2") && has("fma") && has("f16c");
    case CpuIsa::avx512:
      return cpuSupports(CpuIsa::avx2) && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
    case CpuIsa::avx512_bf16: return cpuSupports(CpuIsa::avx512) && has("avx512bf16");
    case CpuIsa::amx_bf16: return cpuHasAmx() && amxUse().usable;
  }
  return false;
}

std::string amxProblem() { return cpuHasAmx() ? amxUse().problem : std::string(); }

CpuIsa bestCpuIsa() {
  CpuIsa best = CpuIsa::baseline;
  for (CpuIsa i : kAllCpuIsas)
    if (cpuSupports(i)) best = i;
  return best;
}

namespace {

// ATTNSCOPE_CPU_ISA, read once (the softmax rows ask for the variant on every row).
struct EnvChoice {
  CpuIsa isa = CpuIsa::baseline;
  std::string problem;
};

const EnvChoice& envChoice() {
  static const EnvChoice choice = [] {
    EnvChoice c;
    c.isa = bestCpuIsa();
    const char* env = std::getenv("ATTNSCOPE_CPU_ISA");
    if (env == nullptr || *env == '\0') return c;
    const auto isa = parseCpuIsa(env);
    if (!isa)
      c.problem = "ATTNSCOPE_CPU_ISA=" + std::string(env) + " is not a kernel variant; allowed: " + allowedList();
    else if (!cpuSupports(*isa))
      c.problem = "ATTNSCOPE_CPU_ISA=" + std::string(env) + " " + unsupported(*isa);
    else
      c.isa = *isa;
    return c;
  }();
  return choice;
}

}  // namespace

std::string cpuIsaProblem() { return g_override.load() >= 0 ? std::string() : envChoice().problem; }

CpuIsa activeCpuIsa() {
  const int forced = g_override.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<CpuIsa>(forced);
  const EnvChoice& c = envChoice();
  if (!c.problem.empty()) throw std::invalid_argument(c.problem);
  return c.isa;
}

void setCpuIsaOverride(std::optional<CpuIsa> isa) {
  if (isa && !cpuSupports(*isa))
    throw std::invalid_argument("CPU kernel variant " + std::string(toString(*isa)) + " " + unsupported(*isa));
  g_override.store(isa ? static_cast<int>(*isa) : -1);
}

std::string cpuIsaMissing(CpuIsa isa) {
  std::string s;
  auto need = [&](std::initializer_list<const char*> features) {
    for (const char* f : features)
      if (!has(f)) s += (s.empty() ? "" : " ") + std::string(f);
  };
  // Each variant needs the narrower one's bits too (kAllCpuIsas' order).
  if (isa >= CpuIsa::avx2) need({"avx2", "fma", "f16c"});
  if (isa >= CpuIsa::avx512) need({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
  if (isa >= CpuIsa::avx512_bf16) need({"avx512bf16"});
  if (isa >= CpuIsa::amx_bf16) need({"amx-tile", "amx-bf16"});
  if (s.empty() && !cpuSupports(isa)) s = amxProblem();
  return s;
}

std::string cpuFeatureList() {
  std::string s;
  for (const char* f : kFeatures)
    if (has(f)) s += (s.empty() ? "" : " ") + std::string(f);
  return s.empty() ? "none beyond x86-64" : s;
}

}  // namespace attnscope::cpu
