#include "kernels/cpu/softmax_math.h"

#include <limits>

#include "kernels/cpu/tile_kernels.h"

// Not under sanitizers: the clones' ifunc resolver runs while the dynamic loader relocates, before
// the sanitizer runtime exists, and GCC instruments it (a TSan build crashed before main).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define ATTNSCOPE_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ATTNSCOPE_CPU_CLONES
#endif

namespace attnscope::cpu {

float rowMax(const float* x, int64_t n) { return activeTileKernels().row_max(x, n); }

float exp2Shifted(const float* in, float* out, int64_t n, float shift, float k) {
  return activeTileKernels().exp2_shifted(in, out, n, shift, k);
}

void scaleRow(float* x, int64_t n, float a) { activeTileKernels().scale_row(x, n, a); }

// Only dense masks use it, once per visible score: left to the compiler's clones.
ATTNSCOPE_CPU_CLONES
void applyKeepMask(float* x, const uint8_t* keep, int64_t n) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) x[j] = keep[j] ? x[j] : ninf;
}

void fillRow(float* x, int64_t n, float value) {
  for (int64_t j = 0; j < n; ++j) x[j] = value;
}

}  // namespace attnscope::cpu
