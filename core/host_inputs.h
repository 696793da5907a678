#pragma once
// The inputs of one run on the host, stored in the spec's dtype (fp32 as float, fp16/bf16 as
// their 16-bit patterns), and the dense mask when there is one. kind = attention: Q [B,H,Lq,D],
// K and V [B,Hkv,Lkv,D]. kind = layer: x [B,L,E] and the layer's weights (q, k, v empty; the
// layer computes them). Generated from the seed (each tensor its own stream, rounded to the
// dtype) or loaded from files.

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/workload_spec.h"

namespace attnscope {

// A layer's model width E: spec.width when set, else heads x head_dim.
inline int64_t layerWidth(const WorkloadSpec& s) { return s.width > 0 ? s.width : s.heads * s.headDim(); }
// Rows of the fused projection, (H + 2 Hkv) x D.
inline int64_t layerQkvRows(const WorkloadSpec& s) { return (s.heads + 2 * s.kvHeads()) * s.headDim(); }

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
  HostTensor q, k, v;  // kind = attention
  // kind = layer, with E the model width (layerWidth) and Ht = H + 2 Hkv:
  //   x [B,L,E] uniform in [-1, 1);  w_qkv [Ht D, E] and b_qkv [Ht D] uniform in +-1/sqrt(E)
  //   (torch.nn.Linear's default bound; rows: H*D query rows head-major, then Hkv*D key rows,
  //   then Hkv*D value rows);  w_o [E, H D] and b_o [E] uniform in +-1/sqrt(H D).
  HostTensor x, w_qkv, b_qkv, w_o, b_o;
  std::vector<uint8_t> mask;  // dense masks only; layout per spec.mask_layout
  // pass = train only: the gradient of the loss sum(O * G) with respect to the output O
  // ([B,H,Lq,D]; a layer's output y: [B,L,E]), in the spec's dtype, uniform in [-1, 1) from its
  // own stream; empty for a forward pass.
  HostTensor g;

  // Throws Cancelled (core/backend.h) when `cancel` is set while generating.
  static HostInputs generate(const WorkloadSpec& spec, const std::atomic<bool>* cancel = nullptr);
};

}  // namespace attnscope
