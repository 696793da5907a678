#include "bench/cpu_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "core/spec/dtype.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace attnscope::bench {
namespace {

constexpr int kChains = 12;                 // independent accumulators: more than latency x ports
constexpr long kIterations = 40'000'000;    // per thread and round: ~0.1 s at 4 GHz
volatile float g_seed = 1.0f;
volatile float g_sink = 0.0f;

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) double fmaAvx2() {
  __m256 acc[kChains];
  const __m256 a = _mm256_set1_ps(g_seed * 0.999999f), b = _mm256_set1_ps(g_seed * 1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(g_seed + static_cast<float>(i));
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm256_add_ps(sum, acc[i]);
  g_sink = _mm256_cvtss_f32(sum);
  return 16.0 * kChains * static_cast<double>(kIterations);
}

__attribute__((target("avx512f"))) double fmaAvx512() {
  __m512 acc[kChains];
  const __m512 a = _mm512_set1_ps(g_seed * 0.999999f), b = _mm512_set1_ps(g_seed * 1e-7f);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(g_seed + static_cast<float>(i));
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  g_sink = _mm512_cvtss_f32(sum);
  return 32.0 * kChains * static_cast<double>(kIterations);
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) double dotBf16() {
  __m512 acc[kChains];
  const __m512 fa = _mm512_set1_ps(g_seed * 1e-3f), fb = _mm512_set1_ps(g_seed * 1e-3f);
  const __m512bh a = _mm512_cvtne2ps_pbh(fa, fa), b = _mm512_cvtne2ps_pbh(fb, fb);
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(g_seed + static_cast<float>(i));
  for (long n = 0; n < kIterations; ++n)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  g_sink = _mm512_cvtss_f32(sum);
  return 64.0 * kChains * static_cast<double>(kIterations);
}

// AMX: six accumulator tiles (more than tdpbf16ps's latency over its issue interval), one A and
// one B tile, palette 1 with every tile 16 rows of 64 bytes.
struct alignas(64) AmxConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
const AmxConfig kAmxConfig = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};
constexpr long kAmxIterations = 2'000'000;  // 6 x 16384 flops each: ~0.1 s at 2 TFLOP/s

__attribute__((target("amx-tile,amx-bf16"))) double dotAmx() {
  alignas(64) uint16_t operand[16 * 32];
  const uint16_t bits = floatToBf16(g_seed * 1e-3f);
  for (uint16_t& x : operand) x = bits;
  // GCC 12's tile loads do not tell the compiler they read the operand: make its stores happen.
  __asm__ volatile("" : : "r"(operand) : "memory");
  _tile_loadconfig(&kAmxConfig);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (long n = 0; n < kAmxIterations; ++n) {
    _tile_dpbf16ps(0, 6, 7);
    _tile_dpbf16ps(1, 6, 7);
    _tile_dpbf16ps(2, 6, 7);
    _tile_dpbf16ps(3, 6, 7);
    _tile_dpbf16ps(4, 6, 7);
    _tile_dpbf16ps(5, 6, 7);
  }
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  _tile_release();
  g_sink = out[0];
  return 6.0 * 16384.0 * static_cast<double>(kAmxIterations);
}
#endif

// Every thread runs the loop once; the rate is all their flops over the wall time.
double rateOn(int threads, double (*loop)()) {
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<std::thread> pool;
    std::vector<double> flops(static_cast<size_t>(threads), 0.0);
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) pool.emplace_back([&, t] { flops[static_cast<size_t>(t)] = loop(); });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : flops) total += f;
    best = std::max(best, total / s);
  }
  return best;
}

}  // namespace

double measurePeak(int threads, cpu::CpuIsa isa) {
#if defined(__x86_64__)
  using cpu::CpuIsa;
  if (!cpu::cpuSupports(isa)) return 0;
  switch (isa) {
    case CpuIsa::avx2: return rateOn(threads, fmaAvx2);
    case CpuIsa::avx512: return rateOn(threads, fmaAvx512);
    case CpuIsa::avx512_bf16: return rateOn(threads, dotBf16);
    // cpuSupports asked Linux for the tile data (every thread of the process may then use it).
    case CpuIsa::amx_bf16: return rateOn(threads, dotAmx);
    default: return 0;
  }
#else
  (void)threads;
  (void)isa;
  return 0;
#endif
}

std::vector<PeakRate> measurePeaks(int threads) {
  using cpu::CpuIsa;
  const std::pair<const char*, CpuIsa> kinds[] = {{"fp32 FMA (avx2)", CpuIsa::avx2},
                                                  {"fp32 FMA (avx512)", CpuIsa::avx512},
                                                  {"bf16 dot (avx512_bf16)", CpuIsa::avx512_bf16},
                                                  {"bf16 tiles (amx_bf16)", CpuIsa::amx_bf16}};
  std::vector<PeakRate> out;
  for (const auto& [what, isa] : kinds)
    if (const double rate = measurePeak(threads, isa); rate > 0) out.push_back({what, isa, rate});
  return out;
}

}  // namespace attnscope::bench
