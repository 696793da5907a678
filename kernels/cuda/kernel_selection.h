#pragma once
// Which compiled kernel instance serves a (dtype, head_dim), and what a device must offer. Pure
// host logic (no CUDA headers) so the dispatch rules are unit-tested without a GPU; the .cu
// launchers switch on the same numbers.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/spec/dtype.h"
#include "core/spec/workload_spec.h"

namespace attnscope::cuda {

// Head dims are padded up to one of these compiled buckets (zero-filled in shared memory).
inline constexpr int kHeadDimBuckets[] = {64, 128, 256};

// One compiled specialisation of the flash kernel.
struct FlashKernelConfig {
  DType dtype = DType::fp16;
  int head_dim_bucket = 0;  // 64, 128 or 256; 0 when no instance fits
  int block_m = 0;          // queries per thread block
  int block_n = 0;          // keys per tile
  int warps = 0;
  bool tensor_cores = false;  // mma.sync m16n8k16 (fp16/bf16) or SIMT fp32
  int64_t smem_bytes = 0;     // dynamic shared memory per block
  std::string name;           // e.g. "flash_fwd_mma<fp16, 128, 128x64>"
};

// The bucket a head dim is padded to, or 0 when it needs more than the largest bucket.
int headDimBucket(int64_t head_dim);

// Why cuda.flash cannot take this head dim, or nullopt when it can.
std::optional<std::string> flashHeadDimProblem(int64_t head_dim);

// The instance picked for (dtype, head_dim); head_dim_bucket == 0 when head_dim is refused.
FlashKernelConfig selectFlashKernel(DType dtype, int64_t head_dim);

// The CUDA architectures in a CMAKE_CUDA_ARCHITECTURES list (';' or ',' separated), sorted:
// "80;90" and "90a,80-real" give {80, 90}.
std::vector<int> builtArchitectures(const std::string& arch_list);

struct DeviceCaps {
  int cc_major = 0;
  int cc_minor = 0;
  int64_t memory_total = 0;
  int64_t max_smem_per_block = 0;  // opt-in dynamic shared memory limit
};

// Reasons the device cannot run any CUDA backend on this spec: compute capability below what the
// build or the dtype needs (bf16 needs 8.0), and a predicted peak above the device's memory.
// Each backend adds its own (CudaBackendBase::backendProblems): no list of backends lives here.
std::vector<std::string> deviceProblems(const WorkloadSpec& spec, const DeviceCaps& caps,
                                        const std::vector<int>& built_archs, int64_t predicted_peak);

// cuda.flash's own: the head dim, tensor cores for fp16 (our mma.sync kernels need 8.0), and the
// shared memory of the instance selectFlashKernel picks.
std::vector<std::string> flashDeviceProblems(const WorkloadSpec& spec, const DeviceCaps& caps);

// The cuBLAS backends' own (cuda.math, cuda.chunked): cuBLAS and the softmax kernel take 32-bit
// dimensions.
std::vector<std::string> cublasShapeProblems(const WorkloadSpec& spec);

}  // namespace attnscope::cuda
