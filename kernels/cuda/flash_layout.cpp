#include "kernels/cuda/flash_layout.h"

namespace attnscope::cuda {

FlashParams flashParams(const WorkloadSpec& spec) {
  const int64_t H = spec.heads, Hkv = spec.kvHeads(), Lq = spec.seq_q, Lkv = spec.seqKv(), D = spec.headDim();
  FlashParams p;
  p.q_row_stride = p.o_row_stride = D;
  p.q_head_stride = p.o_head_stride = Lq * D;
  p.q_batch_stride = p.o_batch_stride = H * Lq * D;
  p.k_row_stride = p.v_row_stride = D;
  p.k_head_stride = p.v_head_stride = Lkv * D;
  p.k_batch_stride = p.v_batch_stride = Hkv * Lkv * D;
  if (spec.mask.kind == MaskKind::dense) {
    p.mask_row_stride = Lkv;
    if (spec.mask_layout == MaskLayout::per_head) {
      p.mask_head_stride = Lq * Lkv;
      p.mask_batch_stride = H * Lq * Lkv;
    }
  }
  p.batch = static_cast<int>(spec.batch);
  p.heads = static_cast<int>(H);
  p.kv_heads = static_cast<int>(Hkv);
  p.seq_q = Lq;
  p.seq_kv = Lkv;
  p.head_dim = static_cast<int>(D);
  p.scale = static_cast<float>(spec.effectiveScale());
  p.scale_log2 = static_cast<float>(spec.effectiveScale() * 1.4426950408889634);
  p.dtype = spec.dtype == DType::fp16 ? ElemType::fp16 : spec.dtype == DType::bf16 ? ElemType::bf16 : ElemType::fp32;
  p.mask_kind = static_cast<int>(spec.mask.kind);
  p.mask_width = spec.mask.width;
  return p;
}

}  // namespace attnscope::cuda
