#include "kernels/cuda/kernel_selection.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "core/base/format.h"
#include "kernels/cuda/flash_bwd_tiling.h"
#include "kernels/cuda/flash_tiling.h"

namespace attnscope::cuda {

int headDimBucket(int64_t head_dim) {
  for (int b : kHeadDimBuckets)
    if (head_dim <= b) return b;
  return 0;
}

std::optional<std::string> flashHeadDimProblem(int64_t head_dim) {
  if (head_dim < 8 || head_dim % 8 != 0 || head_dim > 256)
    return "cuda.flash needs head_dim a multiple of 8 between 8 and 256 (got " + std::to_string(head_dim) +
           "); cuda.math and cuda.chunked take any head_dim";
  return std::nullopt;
}

FlashKernelConfig selectFlashKernel(DType dtype, int64_t head_dim) {
  FlashKernelConfig c;
  c.dtype = dtype;
  if (flashHeadDimProblem(head_dim)) return c;
  c.head_dim_bucket = headDimBucket(head_dim);
  const int64_t d = c.head_dim_bucket;
  // The shapes and sizes the launchers instantiate (flash_tiling.h): SIMT for fp32, tensor
  // cores for fp16 and bf16.
  c.tensor_cores = dtype != DType::fp32;
  const FlashTile tile = c.tensor_cores ? mmaTile(static_cast<int>(d)) : simtTile();
  c.block_m = tile.block_m;
  c.block_n = tile.block_n;
  c.warps = tile.warps;
  c.smem_bytes = c.tensor_cores ? mmaSmemBytes(static_cast<int>(d), 2) : simtSmemBytes(static_cast<int>(d));
  std::ostringstream name;
  name << (c.tensor_cores ? "flash_fwd_mma<" : "flash_fwd_simt<") << toString(dtype) << ", " << d << ", "
       << c.block_m << "x" << c.block_n << ">";
  c.name = name.str();
  return c;
}

std::vector<int> builtArchitectures(const std::string& arch_list) {
  std::vector<int> out;
  std::string item;
  std::string list = arch_list;
  std::replace(list.begin(), list.end(), ',', ';');
  std::istringstream in(list);
  while (std::getline(in, item, ';')) {
    // Entries look like "80", "90a", "80-real" or "90-virtual".
    int v = 0;
    size_t i = 0;
    while (i < item.size() && item[i] >= '0' && item[i] <= '9') v = v * 10 + (item[i++] - '0');
    if (i > 0) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
std::string ccText(const DeviceCaps& c) { return std::to_string(c.cc_major) + "." + std::to_string(c.cc_minor); }
}  // namespace

std::vector<std::string> deviceProblems(const WorkloadSpec& spec, const DeviceCaps& caps,
                                        const std::vector<int>& built_archs, int64_t predicted_peak) {
  std::vector<std::string> why;
  const int cc = caps.cc_major * 10 + caps.cc_minor;
  if (!built_archs.empty() && cc < built_archs.front()) {
    std::string list;
    for (int a : built_archs) list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
    why.push_back("this build has kernels for " + list + " only; the device has compute capability " +
                  ccText(caps) + " (rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(caps.cc_major) +
                  std::to_string(caps.cc_minor) + ")");
  }
  if (spec.dtype == DType::bf16 && cc < 80)
    why.push_back("bf16 needs compute capability 8.0 or newer; the device has " + ccText(caps));
  if (caps.memory_total > 0 && predicted_peak > caps.memory_total)
    why.push_back("predicted peak " + formatBytes(predicted_peak) + " exceeds the device's " +
                  formatBytes(caps.memory_total) + " of memory");
  return why;
}

std::vector<std::string> flashDeviceProblems(const WorkloadSpec& spec, const DeviceCaps& caps) {
  std::vector<std::string> why;
  const int cc = caps.cc_major * 10 + caps.cc_minor;
  if (auto p = flashHeadDimProblem(spec.headDim())) why.push_back(*p);
  if (spec.dtype == DType::fp16 && cc < 70)
    why.push_back("cuda.flash fp16 needs tensor cores (compute capability 7.0 or newer); the device has " +
                  ccText(caps));
  else if (spec.dtype == DType::fp16 && cc < 80)
    why.push_back("cuda.flash fp16 uses mma.sync m16n8k16, which needs compute capability 8.0 or newer; the "
                  "device has " + ccText(caps));
  const FlashKernelConfig k = selectFlashKernel(spec.dtype, spec.headDim());
  if (k.head_dim_bucket > 0 && caps.max_smem_per_block > 0 && k.smem_bytes > caps.max_smem_per_block)
    why.push_back(k.name + " needs " + formatBytes(k.smem_bytes) + " of shared memory per block; the device allows " +
                  formatBytes(caps.max_smem_per_block));
  const int64_t bwd_smem = flashBwdSmemBytes(spec.headDim());
  if (spec.pass == Pass::train && k.head_dim_bucket > 0 && caps.max_smem_per_block > 0 &&
      bwd_smem > caps.max_smem_per_block)
    why.push_back("the cuda.flash backward needs " + formatBytes(bwd_smem) +
                  " of shared memory per block at head_dim " + std::to_string(spec.headDim()) +
                  "; the device allows " + formatBytes(caps.max_smem_per_block));
  return why;
}

std::vector<std::string> cublasShapeProblems(const WorkloadSpec& spec) {
  const int64_t group = spec.heads / spec.kvHeads();
  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (spec.seqKv() > kIntMax || group * spec.seq_q > kIntMax || spec.batch * spec.heads * spec.seq_q > kIntMax)
    return {"sequence too long for cuBLAS's 32-bit matrix dimensions"};
  return {};
}

}  // namespace attnscope::cuda
