#pragma once
// Row operations of the softmax. rowMax, exp2Shifted and scaleRow forward to the active kernel
// variant (tile_kernels.h: explicit AVX2 code on AVX2 CPUs, AVX-512 on AVX-512 ones, plain loops
// on baseline x86-64); the backends call the variant's functions directly, these are for everyone
// else.

#include <cstdint>

namespace attnscope::cpu {

// Largest element of x[0..n); -inf when n == 0.
float rowMax(const float* x, int64_t n);

// out[j] = 2^((in[j] - shift) * k) for j in [0, n), returns their sum. in may equal out.
// Arguments below -126 after scaling give exactly 0, so -inf (a masked score) gives 0.
// Relative error about 2e-7.
float exp2Shifted(const float* in, float* out, int64_t n, float shift, float k);

// x[j] = keep[j] ? x[j] : -inf.
void applyKeepMask(float* x, const uint8_t* keep, int64_t n);

// x[j] = value for j in [0, n).
void fillRow(float* x, int64_t n, float value);

// x[j] *= a.
void scaleRow(float* x, int64_t n, float a);

}  // namespace attnscope::cpu
