#pragma once
// The flash kernel's tile shapes and shared-memory sizes, written down once: the launchers
// (flash_fwd_mma.cuh, flash_fwd_simt.cuh) instantiate their kernels from these, and
// selectFlashKernel (kernel_selection.cpp, host C++ without CUDA headers) reports and checks the
// same numbers against the device. Plain constexpr arithmetic, callable from host and device code.

#include <cstdint>

#ifdef __CUDACC__
#define ATTNSCOPE_HOST_DEVICE __host__ __device__
#else
#define ATTNSCOPE_HOST_DEVICE
#endif

namespace attnscope::cuda {

struct FlashTile {
  int block_m = 0;  // queries per thread block
  int block_n = 0;  // keys per tile
  int warps = 0;
};

// Tensor-core (mma.sync m16n8k16) kernel, fp16 and bf16: each warp owns block_m / warps query
// rows (16 per m16 tile); the 256 bucket halves both to stay within shared memory.
ATTNSCOPE_HOST_DEVICE constexpr FlashTile mmaTile(int head_dim_bucket) {
  return head_dim_bucket == 256 ? FlashTile{64, 32, 4} : FlashTile{128, 64, 4};
}

// Shared-memory rows of the mma kernel are padded by this many elements (16 bytes) so ldmatrix
// rows land in distinct banks.
inline constexpr int kMmaRowPad = 8;

// Q tile, plus K and V double-buffered (4 key tiles), each row padded.
ATTNSCOPE_HOST_DEVICE constexpr int64_t mmaSmemBytes(int head_dim_bucket, int element_bytes) {
  const FlashTile t = mmaTile(head_dim_bucket);
  return static_cast<int64_t>(t.block_m + 4 * t.block_n) * (head_dim_bucket + kMmaRowPad) * element_bytes;
}

// SIMT kernel, fp32: a warp scores one query row against 32 keys (one per lane) at a time.
ATTNSCOPE_HOST_DEVICE constexpr FlashTile simtTile() { return FlashTile{16, 32, 4}; }

// Q tile, K tile transposed with one padding column (bank conflicts), V tile; fp32.
ATTNSCOPE_HOST_DEVICE constexpr int64_t simtSmemBytes(int head_dim_bucket) {
  const FlashTile t = simtTile();
  return (static_cast<int64_t>(t.block_m) * head_dim_bucket + static_cast<int64_t>(t.block_n) * (head_dim_bucket + 1) +
          static_cast<int64_t>(t.block_n) * head_dim_bucket) *
         4;
}

}  // namespace attnscope::cuda
