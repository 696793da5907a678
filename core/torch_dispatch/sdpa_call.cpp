#include "core/torch_dispatch/sdpa_call.h"

namespace attnscope::torch_dispatch {

namespace {
std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

std::string_view toString(SdpaMaskPassing m) {
  switch (m) {
    case SdpaMaskPassing::none: return "none";
    case SdpaMaskPassing::is_causal: return "is_causal";
    case SdpaMaskPassing::causal_lower_right: return "causal_lower_right";
    case SdpaMaskPassing::bool_tensor: return "bool_tensor";
    case SdpaMaskPassing::float_tensor: return "float_tensor";
  }
  return "?";
}

int64_t SdpaCall::maskNumel() const {
  if (!hasMaskTensor()) return 0;
  int64_t n = 1;
  for (int64_t d : mask_shape) n *= d;
  return n;
}

int64_t SdpaCall::maskBytes() const { return maskNumel() * (hasFloatMask() ? bytesPerElement(mask_dtype) : 1); }

std::string SdpaCall::describe() const {
  std::string s = "q " + shapeText({batch, q_heads, seq_q, head_dim}) + " " + std::string(toString(dtype)) +
                  ", k/v " + shapeText({batch, kv_heads, seq_kv, head_dim});
  if (head_dim_v != head_dim) s += "/" + std::to_string(head_dim_v);
  if (kv_repeated) s += " (repeated to " + std::to_string(q_heads) + " heads: torch < 2.5 has no enable_gqa)";
  switch (mask) {
    case SdpaMaskPassing::none: break;
    case SdpaMaskPassing::is_causal: s += ", is_causal=True"; break;
    case SdpaMaskPassing::causal_lower_right:
      s += ", attn_mask=causal_lower_right(" + std::to_string(seq_q) + ", " + std::to_string(seq_kv) + ")";
      break;
    case SdpaMaskPassing::bool_tensor: s += ", attn_mask bool " + shapeText(mask_shape); break;
    case SdpaMaskPassing::float_tensor:
      s += ", attn_mask " + std::string(toString(mask_dtype)) + " " + shapeText(mask_shape) + " (additive)";
      break;
  }
  if (enable_gqa) s += ", enable_gqa=True";
  return s;
}

std::string SdpaCall::pythonCall() const {
  std::string s = "F.scaled_dot_product_attention(q, k, v";
  switch (mask) {
    case SdpaMaskPassing::none: break;
    case SdpaMaskPassing::is_causal: s += ", is_causal=True"; break;
    case SdpaMaskPassing::causal_lower_right: s += ", attn_mask=causal_lower_right(Lq, Lkv)"; break;
    case SdpaMaskPassing::bool_tensor:
    case SdpaMaskPassing::float_tensor: s += ", attn_mask=mask"; break;
  }
  if (enable_gqa) s += ", enable_gqa=True";
  return s + ")";
}

SdpaCall sdpaCallFor(const WorkloadSpec& spec, const TorchVersion& version) {
  SdpaCall c;
  c.batch = spec.batch;
  c.q_heads = spec.heads;
  c.kv_heads = spec.kvHeads();
  c.seq_q = spec.seq_q;
  c.seq_kv = spec.seqKv();
  c.head_dim = c.head_dim_v = spec.headDim();
  c.dtype = spec.dtype;
  if (c.kv_heads != c.q_heads) {
    if (version >= TorchVersion{2, 5, 0}) {
      c.enable_gqa = true;
    } else {
      c.kv_repeated = true;
      c.kv_heads = c.q_heads;
    }
  }
  const std::vector<int64_t> layout = spec.mask_layout == MaskLayout::broadcast
                                          ? std::vector<int64_t>{1, 1, c.seq_q, c.seq_kv}
                                          : std::vector<int64_t>{c.batch, c.q_heads, c.seq_q, c.seq_kv};
  switch (spec.mask.kind) {
    case MaskKind::none: break;
    case MaskKind::causal:
      if (c.seq_q == c.seq_kv) {
        c.mask = SdpaMaskPassing::is_causal;
      } else if (version >= TorchVersion{2, 3, 0}) {
        c.mask = SdpaMaskPassing::causal_lower_right;
      } else {
        c.mask = SdpaMaskPassing::bool_tensor;
        c.mask_shape = {c.seq_q, c.seq_kv};
      }
      break;
    case MaskKind::window:
    case MaskKind::block:
    case MaskKind::dense:
      c.mask = SdpaMaskPassing::bool_tensor;
      c.mask_shape = layout;
      break;
    case MaskKind::additive:
      c.mask = SdpaMaskPassing::float_tensor;
      c.mask_shape = layout;
      c.mask_dtype = spec.maskDType();
      break;
  }
  return c;
}

}  // namespace attnscope::torch_dispatch
