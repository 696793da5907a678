#pragma once
// The inputs of one run on the host: Q [B,H,Lq,D], K and V [B,Hkv,Lkv,D] stored in the spec's
// dtype (fp32 as float, fp16/bf16 as their 16-bit patterns), and the dense mask when there is
// one. Generated from the seed (uniform in [-1, 1), rounded to the dtype) or loaded from files.

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/workload_spec.h"

namespace attnscope {

struct HostTensor {
  DType dtype = DType::fp32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;  // raw storage in dtype

  int64_t elements() const;
  float at(int64_t i) const;  // element i converted to float
  void set(int64_t i, float v);  // rounds to dtype
  const void* data() const { return bytes.data(); }
  static HostTensor zeros(DType d, std::vector<int64_t> shape);
};

struct HostInputs {
  HostTensor q, k, v;
  std::vector<uint8_t> mask;  // dense masks only; layout per spec.mask_layout
  // pass = train only: G [B,H,Lq,D] in the spec's dtype, the gradient of the loss sum(O * G)
  // with respect to O (drawn like Q from its own stream); empty for a forward pass.
  HostTensor g;

  // Throws Cancelled (core/backend.h) when `cancel` is set while generating.
  static HostInputs generate(const WorkloadSpec& spec, const std::atomic<bool>* cancel = nullptr);
};

}  // namespace attnscope
