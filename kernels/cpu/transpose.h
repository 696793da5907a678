#pragma once
// A matrix transposed in blocks, for the products whose left-hand side is a transpose and cannot
// be read in place: a linear layer's weight gradient a^T b on bf16 pairs, cpu.reference's dK and
// dV from dS^T and P^T (rows Lkv floats apart: read in place by gemm_at each step of the product
// touches a new page, and cpu.reference train fp32 D128 L1024 went 110-121 -> 121-134 ms). The
// fp32 weight gradients and cpu.flash's fp32 tiles (rows of 256 and 128 floats) use gemm_at.

#include <algorithm>
#include <cstdint>

namespace attnscope::cpu {

// out[c * ldo + r] = in[r * ldi + c] for r < rows, c < cols; nothing else in out is written.
// In 32 x 32 blocks, so the block's reads and writes both stay in L1: on matrices of 256 x 256
// and more the plain two loops write a new cache line per element and took 1-3.7 ns per element
// where this takes 0.4 (Intel Xeon model 207, fp32 and bf16 alike; docs/PERFORMANCE.md). On a
// tile already in L1 the two are the same, so cpu.flash's bf16 backward tiles keep plain loops.
template <class T>
void transposeBlocked(const T* in, int64_t rows, int64_t cols, int64_t ldi, T* out, int64_t ldo) {
  constexpr int64_t kBlock = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
    const int64_t r1 = std::min(rows, r0 + kBlock);
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[c * ldo + r] = in[r * ldi + c];
    }
  }
}

}  // namespace attnscope::cpu
