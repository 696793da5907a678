#pragma once
// The inputs of one run on the host, stored in the spec's dtype (fp32 as float, fp16/bf16 as
// their 16-bit patterns), and the dense or additive mask when there is one. kind = attention: Q [B,H,Lq,D],
// K and V [B,Hkv,Lkv,D]. kind = layer: x [B,L,E] and the layer's weights (q, k, v empty; the
// layer computes them). Generated from the seed (each tensor its own stream, rounded to the
// dtype) or loaded from files.

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/spec/dtype.h"
#include "core/spec/workload_spec.h"

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

// The shape of an additive mask tensor: [1,1,Lq,Lkv] (broadcast) or [B,H,Lq,Lkv] (per_head).
inline std::vector<int64_t> additiveMaskShape(const WorkloadSpec& s) {
  return s.mask_layout == MaskLayout::per_head ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                                               : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
}

struct HostInputs {
  HostTensor q, k, v;  // kind = attention
  // kind = layer, with E the model width (layerWidth) and Ht = H + 2 Hkv:
  //   x [B,L,E] uniform in [-1, 1);  w_qkv [Ht D, E] and b_qkv [Ht D] uniform in +-1/sqrt(E)
  //   (torch.nn.Linear's default bound; rows: H*D query rows head-major, then Hkv*D key rows,
  //   then Hkv*D value rows);  w_o [E, H D] and b_o [E] uniform in +-1/sqrt(H D).
  HostTensor x, w_qkv, b_qkv, w_o, b_o;
  // layers > 1: the weights of layers 2..N (deeper[0] is layer 2), the shapes and bounds of layer
  // 1's, each drawn from its own streams (the seed mixed with the layer's number), so layer 1 of a
  // stack is the single layer of the same spec.
  struct LayerWeights {
    HostTensor w_qkv, b_qkv, w_o, b_o;
  };
  std::vector<LayerWeights> deeper;
  std::vector<uint8_t> mask;  // dense masks only; layout per spec.mask_layout
  // Additive masks only: the float mask in spec.maskDType(), [1,1,Lq,Lkv] or [B,H,Lq,Lkv] per
  // spec.mask_layout, the values of additiveMaskValue (core/spec/mask.h); -inf drops a key.
  HostTensor additive_mask;
  // pass = train only: the gradient of the loss sum(O * G) with respect to the output O
  // ([B,H,Lq,D]; a layer's output y: [B,L,E]), in the spec's dtype, uniform in [-1, 1) from its
  // own stream; empty for a forward pass.
  HostTensor g;

  // Throws Cancelled (core/base/cancel.h) when `cancel` is set while generating.
  static HostInputs generate(const WorkloadSpec& spec, const std::atomic<bool>* cancel = nullptr);

  // Layer `layer`'s weights (0-based: 0 is w_qkv, b_qkv, w_o, b_o above, l > 0 is deeper[l - 1]).
  struct WeightsOf {
    const HostTensor *w_qkv, *b_qkv, *w_o, *b_o;
  };
  WeightsOf weights(int64_t layer) const;
};

// The seed of layer `layer`'s weights (0-based): the spec's for layer 0, a mix of it and the
// layer's number for the others.
uint64_t layerWeightSeed(uint64_t seed, int64_t layer);

// The gradients a train pass produces for kind = attention.
struct AttentionGradients {
  std::vector<float> dq, dk, dv;
};

// The gradients a train pass produces for kind = layer, as float in their tensors' layouts:
// dx [B,L,E], dw_qkv [(H + 2 Hkv) D, E], db_qkv [(H + 2 Hkv) D], dw_o [E, H D], db_o [E]. A stack
// gives one per layer, in order: dx is the gradient of the layer's own input (layer 1's: the
// stack's dx; layer l's: the gradient reaching layer l - 1's output).
struct LayerGradients {
  std::vector<float> dx, dw_qkv, db_qkv, dw_o, db_o;
};

// What a layer computed between its stages, in the spec's dtype as stored: q [B,H,L,D], k and v
// [B,Hkv,L,D] (the projection split into heads), o [B,H,L,D] (the attention's output, heads not
// yet merged); for train also d_o (the gradient reaching the attention, [B,H,L,D]) and dq, dk, dv.
// Read only by the accuracy check, which holds each stage against its actual inputs
// (core/check/reference_layer.h) so a check of a wide layer stays cheap.
// A stack gives one per layer, and x: the layer's input (layer l - 1's output; empty for layer 1,
// whose input is the run's x).
struct LayerIntermediates {
  HostTensor x;
  HostTensor q, k, v, o;
  HostTensor d_o, dq, dk, dv;  // pass = train
};

}  // namespace attnscope
