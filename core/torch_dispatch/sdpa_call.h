#pragma once
// How a WorkloadSpec is handed to torch.nn.functional.scaled_dot_product_attention. The mask's
// form decides the dispatch, so it is part of the workload (issue 9):
//   none      attn_mask=None
//   causal    is_causal=True when Lq == Lkv; when Lq != Lkv the spec's bottom-right causal is
//             torch.nn.attention.bias.causal_lower_right(Lq, Lkv) (torch 2.3+; older torch gets
//             the same mask as a materialised bool tensor [Lq, Lkv])
//   dense     a bool tensor in the spec's layout: [1,1,Lq,Lkv] (broadcast) or [B,H,Lq,Lkv]
//   window:W, block:W   bool tensors in the same layouts
//   additive  a float tensor (mask_dtype: fp32 or q's dtype) in the same layouts, added to the
//             scaled scores as it is (no bool -> float conversion)
// GQA (kv_heads < heads) uses enable_gqa=True from torch 2.5; older torch has no enable_gqa, so
// K and V are repeated to H heads (repeat_interleave) before the call.
// The torch backends (kernels/torch) build their call from sdpaCallFor so that what runs is what
// the explainer explains.

#include <cstdint>
#include <string>
#include <vector>

#include "core/spec/dtype.h"
#include "core/torch_dispatch/torch_target.h"
#include "core/spec/workload_spec.h"

namespace attnscope::torch_dispatch {

enum class SdpaMaskPassing {
  none,                // attn_mask=None, is_causal=False
  is_causal,           // is_causal=True (top-left; only used when Lq == Lkv)
  causal_lower_right,  // attn_mask=causal_lower_right(Lq, Lkv) (a CausalBias), torch 2.3+
  bool_tensor,         // attn_mask=<bool tensor of mask_shape>
  float_tensor,        // attn_mask=<float tensor of mask_shape, in mask_dtype> (an additive bias)
};
std::string_view toString(SdpaMaskPassing m);

struct SdpaCall {
  int64_t batch = 1;
  int64_t q_heads = 8;
  int64_t kv_heads = 8;  // K/V heads as passed (== q_heads when repeated for torch < 2.5)
  int64_t seq_q = 1024;
  int64_t seq_kv = 1024;
  int64_t head_dim = 64;    // of Q and K
  int64_t head_dim_v = 64;  // of V
  DType dtype = DType::fp32;
  SdpaMaskPassing mask = SdpaMaskPassing::none;
  std::vector<int64_t> mask_shape;  // bool_tensor, float_tensor: 2-D [Lq, Lkv] or 4-D
  DType mask_dtype = DType::fp32;   // float_tensor only
  bool enable_gqa = false;          // passed enable_gqa=True (kv_heads < q_heads, torch 2.5+)
  bool kv_repeated = false;         // torch < 2.5 and GQA: K/V repeated to q_heads by the caller
  double dropout_p = 0.0;

  int64_t maskNumel() const;      // elements of the mask tensor (0 without one)
  int64_t maskBytes() const;      // its bytes: 1 per element for bool, mask_dtype's size for float
  bool hasMaskTensor() const { return mask == SdpaMaskPassing::bool_tensor || mask == SdpaMaskPassing::float_tensor; }
  bool hasFloatMask() const { return mask == SdpaMaskPassing::float_tensor; }
  bool isCausal() const { return mask == SdpaMaskPassing::is_causal; }
  // "q [1,16,10000,4] fp16, k/v [1,16,10000,4], attn_mask bool [1,1,10000,10000]"
  std::string describe() const;
  // The Python expression of the call, e.g. "F.scaled_dot_product_attention(q, k, v, attn_mask=m)".
  std::string pythonCall() const;
};

SdpaCall sdpaCallFor(const WorkloadSpec& spec, const TorchVersion& version);

}  // namespace attnscope::torch_dispatch
