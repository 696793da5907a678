#pragma once
// What the CUDA tables of the explainer's tests share (test_explain_cuda_table.cpp: rules, archs
// and order; test_explain_cuda_memory.cpp: memory formulas and suggestions).
#include <algorithm>
#include <vector>

#include "core/torch_dispatch/sdpa_explain.h"

namespace attnscope::torch_dispatch::cuda_table {

using K = SdpaKernel;
inline const auto f16 = DType::fp16, f32 = DType::fp32, b16 = DType::bf16;

// The archs every arch-dependent rule is tried on (sm121: where a range ends there, 2.8+).
inline const std::vector<int> kArchs{70, 75, 80, 86, 89, 90, 100, 120, 121};

inline TorchTarget cudaTarget(const char* torch, int sm) {
  return defaultTorchTarget(*parseTorchVersion(torch), TorchDevice::cuda, {sm / 10, sm % 10});
}

inline bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace attnscope::torch_dispatch::cuda_table
