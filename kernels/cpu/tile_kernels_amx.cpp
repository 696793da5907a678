// The amx_bf16 variant's one kernel of its own: gemm_pairs on AMX tiles (tile_kernels_amx.h, with
// the tile instructions below), and what guards it: Linux's permission for the tile data and a
// self-check against avx512_bf16's gemm_pairs, both once per process, before the variant is
// offered (cpuSupports). A CPU that has AMX but fails either runs avx512_bf16, and the
// environment record says why (amxProblem()).

#include "kernels/cpu/tile_kernels.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "core/spec/dtype.h"

namespace attnscope::cpu {
namespace {

// The same inputs on every machine: xorshift64, values in [-2, 2) with 8 significant bits, so
// they are exact in bf16.
struct FixedSeed {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  uint16_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return floatToBf16(static_cast<float>(static_cast<int>((s >> 40) & 0x1ff) - 256) / 128.0f);
  }
};

struct SelfCheckCase {
  int64_t m, n, k, lda_extra, ldc_extra;
  float alpha, beta;
};

// Awkward for 32-row blocks of 16-row tiles, 32-column strips of 16-column tiles and steps of 16
// pairs, and within the bound below (k <= 70).
constexpr SelfCheckCase kSelfCheckCases[] = {
    {37, 45, 70, 0, 3, 1.0f, 0.0f},    // a 5-row block, a 13-column strip, a last step of 3 pairs
    {32, 32, 64, 0, 0, 1.0f, 0.0f},    // one whole block, two whole steps
    {50, 57, 69, 6, 5, 0.5f, 1.0f},    // an 18-row block, a 25-column strip, odd k, rows wider than k
    {64, 64, 64, 0, 0, -1.0f, 0.25f},  // 2 x 2 whole blocks
    {16, 16, 33, 2, 1, 2.0f, 0.0f},    // one tile of rows and of columns, odd k
    {5, 7, 0, 0, 1, 1.0f, 0.5f},       // k 0: C = beta C
};

constexpr uint16_t kBf16Nan = 0x7fc0;
constexpr uint32_t kUntouched = 0x7fc5a5a5u;  // a quiet NaN in C's padding, which no product may write

float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

std::string describe(const SelfCheckCase& t) {
  std::ostringstream o;
  o << "m " << t.m << ", n " << t.n << ", k " << t.k << " (alpha " << t.alpha << ", beta " << t.beta << ")";
  return o.str();
}

// One case: empty when the two agree.
std::string compareOn(const SelfCheckCase& t, const TileKernels& candidate, const TileKernels& reference) {
  FixedSeed rng;
  rng.s += static_cast<uint64_t>(t.m * 131 + t.n * 17 + t.k);
  const int64_t k2 = (t.k + 1) / 2 * 2, lda = k2 + t.lda_extra, ldc = t.n + t.ldc_extra;
  // A: k values, then the even-length padding zero, then NaN that no product may read.
  std::vector<uint16_t> a(static_cast<size_t>(t.m * lda), kBf16Nan);
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t p = 0; p < k2; ++p) a[i * lda + p] = p < t.k ? rng.next() : uint16_t{0};
  std::vector<uint16_t> b(static_cast<size_t>(t.k * t.n));
  for (uint16_t& x : b) x = rng.next();
  // NaN after the packed pairs: a tile load past the end shows.
  std::vector<uint16_t> packed(static_cast<size_t>(reference.pair_elements(t.k, t.n) + 16 * 64), kBf16Nan);
  reference.pack_pairs(b.data(), t.n, false, t.k, t.n, packed.data());
  // C: one row more than m; NaN where beta 0 must not read it.
  std::vector<float> c0(static_cast<size_t>((t.m + 1) * ldc), bitsToFloat(kUntouched));
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) c0[i * ldc + j] = t.beta == 0.0f ? std::nanf("") : bf16ToFloat(rng.next());
  std::vector<float> want = c0, got = c0;
  reference.gemm_pairs(t.m, t.n, t.k, t.alpha, a.data(), lda, packed.data(), t.beta, want.data(), ldc);
  candidate.gemm_pairs(t.m, t.n, t.k, t.alpha, a.data(), lda, packed.data(), t.beta, got.data(), ldc);

  // Both sum each element's pairs in fp32 and round after every product added, but not always in
  // the same order (the SDM's pseudo-code for tdpbf16ps does not bind the hardware's internal
  // order). With P pairs, alpha and beta, each is within (2P + 2) * 2^-24 of
  // S = |alpha| * sum |a||b| + |beta * c| of the exact value: for P <= 35 (k <= 70) two correct
  // products differ by under 1e-5 * S, while a wrong tile, edge or stride is off by whole
  // products (and any NaN read from the padding shows as NaN). These inputs (multiples of 1/128
  // below 2) in fact keep every sum exact in fp32, so correct products agree bit for bit; the
  // bound is there so the check does not rest on that.
  double worst = -1.0;
  int64_t wi = 0, wj = 0;
  double bound_at_worst = 0.0;
  for (int64_t i = 0; i <= t.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = static_cast<size_t>(i * ldc + j);
      if (i == t.m || j >= t.n) {
        if (floatBits(got[at]) != kUntouched || floatBits(want[at]) != kUntouched) {
          std::ostringstream o;
          o << "writes C at (" << i << ", " << j << "), outside " << describe(t) << " (ldc " << ldc << "): "
            << (floatBits(got[at]) != kUntouched ? candidate.name : reference.name);
          return o.str();
        }
        continue;
      }
      double sum_abs = 0.0;
      for (int64_t p = 0; p < t.k; ++p)
        sum_abs += std::fabs(static_cast<double>(bf16ToFloat(a[i * lda + p]))) *
                   std::fabs(static_cast<double>(bf16ToFloat(b[p * t.n + j])));
      const double beta_c = t.beta == 0.0f ? 0.0 : std::fabs(static_cast<double>(t.beta) * c0[at]);
      const double bound = 1e-5 * (std::fabs(static_cast<double>(t.alpha)) * sum_abs + beta_c);
      const double diff = std::isfinite(got[at]) && std::isfinite(want[at])
                              ? std::fabs(static_cast<double>(got[at]) - static_cast<double>(want[at]))
                              : HUGE_VAL;
      if (diff > bound && diff - bound > worst) {
        worst = diff - bound;
        wi = i;
        wj = j;
        bound_at_worst = bound;
      }
    }
  if (worst < 0.0) return {};
  const size_t at = static_cast<size_t>(wi * ldc + wj);
  std::ostringstream o;
  o.precision(9);
  o << "differs by " << std::fabs(static_cast<double>(got[at]) - static_cast<double>(want[at])) << " at (" << wi << ", "
    << wj << ") of " << describe(t) << ": " << got[at] << " from " << candidate.name << ", " << want[at] << " from "
    << reference.name;
  o.precision(2);
  o << " (bound " << bound_at_worst << ")";
  return o.str();
}

#if defined(__linux__) && defined(__x86_64__)
std::string errnoText(int e) {
  std::string s = std::strerror(e) + std::string(" (errno ") + std::to_string(e) + ")";
  if (e == EINVAL) s += "; kernels before Linux 5.16 do not know the request";
  return s;
}
#endif

// Linux hands the tile data (8 KiB of XSAVE state) to a process only on request; until then a
// tile instruction raises SIGILL. Empty when granted (for the whole process, threads started
// before included), else why not.
std::string requestTileData() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return "ARCH_REQ_XCOMP_PERM: " + errnoText(errno);
  unsigned long granted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &granted) != 0) return "ARCH_GET_XCOMP_PERM: " + errnoText(errno);
  if ((granted & (1ul << kXfeatureXtiledata)) == 0) return "XTILEDATA not among the granted features " + std::to_string(granted);
  return {};
#else
  return "no request for the tile data on this system (Linux's ARCH_REQ_XCOMP_PERM)";
#endif
}

}  // namespace

std::string gemmPairsDisagreement(const TileKernels& candidate, const TileKernels& reference) {
  if (candidate.nr != reference.nr || candidate.gemm_pairs == nullptr || reference.gemm_pairs == nullptr)
    return std::string("cannot compare ") + candidate.name + " with " + reference.name +
           ": no pair products or strips of different widths";
  for (const SelfCheckCase& t : kSelfCheckCases)
    if (std::string d = compareOn(t, candidate, reference); !d.empty()) return d;
  return {};
}

const AmxUse& amxUse() {
  static const AmxUse use = [] {
    AmxUse u;
    if (const std::string why = requestTileData(); !why.empty()) {
      u.problem = "AMX: not permitted by the kernel (arch_prctl: " + why + ")";
      return u;
    }
#if defined(__x86_64__)
    const TileKernels& reference = tileKernels(CpuIsa::avx512_bf16);
    if (const std::string d = gemmPairsDisagreement(tileKernels(CpuIsa::amx_bf16), reference); !d.empty()) {
      u.problem = "AMX switched off: self-check against " + std::string(reference.name) + " " + d;
      return u;
    }
    u.usable = true;
#endif
    return u;
  }();
  return use;
}

}  // namespace attnscope::cpu

#if defined(__x86_64__)

// Everything below is built for AMX as well as avx512_bf16's instruction set.
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c,amx-tile,amx-bf16")
#endif

namespace attnscope::cpu {
namespace {

#include "kernels/cpu/tile_kernels_impl.h"
#include "kernels/cpu/tile_kernels_bf16.h"
#include "kernels/cpu/tile_kernels_amx.h"

// Palette 1, every tile 16 rows of 64 bytes (tile_kernels_amx.h says which holds what).
struct alignas(64) TileConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
const TileConfig kTileConfig = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// GCC 12's tile loads hand the asm only the address, not the memory behind it, so without a
// barrier on each side the compiler may move (or drop) the stores that fill an edge copy across
// the load that reads it.
inline void memoryBarrier(const void* p) { __asm__ volatile("" : : "r"(p) : "memory"); }

// The intrinsics paste the tile number into the instruction's text, so each one is spelled out
// once here for the numbers tile_kernels_amx.h uses.
struct AmxTiles {
  static void configure() { _tile_loadconfig(&kTileConfig); }
  // Back to the initial state, so a context switch saves no tile data for this thread.
  static void release() { _tile_release(); }
  template <int t>
  static void zero() {
    static_assert(t >= 0 && t < 4);
    if constexpr (t == 0) _tile_zero(0);
    if constexpr (t == 1) _tile_zero(1);
    if constexpr (t == 2) _tile_zero(2);
    if constexpr (t == 3) _tile_zero(3);
  }
  template <int t>
  static void load(const void* p, int64_t stride) {
    static_assert(t >= 4 && t < 8);
    memoryBarrier(p);
    if constexpr (t == 4) _tile_loadd(4, p, stride);
    if constexpr (t == 5) _tile_loadd(5, p, stride);
    if constexpr (t == 6) _tile_loadd(6, p, stride);
    if constexpr (t == 7) _tile_loadd(7, p, stride);
    memoryBarrier(p);
  }
  template <int t>
  static void store(void* p, int64_t stride) {
    static_assert(t >= 0 && t < 4);
    if constexpr (t == 0) _tile_stored(0, p, stride);
    if constexpr (t == 1) _tile_stored(1, p, stride);
    if constexpr (t == 2) _tile_stored(2, p, stride);
    if constexpr (t == 3) _tile_stored(3, p, stride);
    memoryBarrier(p);
  }
  template <int c, int a, int b>
  static void dot() {
    static_assert((a == 4 || a == 5) && (b == 6 || b == 7) && c == 2 * (a - 4) + (b - 6));
    if constexpr (c == 0) _tile_dpbf16ps(0, 4, 6);
    if constexpr (c == 1) _tile_dpbf16ps(1, 4, 7);
    if constexpr (c == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (c == 3) _tile_dpbf16ps(3, 5, 7);
  }
};

}  // namespace

void gemmPairsAmx(int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a, int64_t lda,
                  const uint16_t* packed, float beta, float* c, int64_t ldc) {
  gemmPairsTiles<AmxTiles>(m, n, k, alpha, a, lda, packed, beta, c, ldc);
}

}  // namespace attnscope::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__
