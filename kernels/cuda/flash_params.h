#pragma once
// Plain parameter structs for the CUDA kernels: pointers, strides in elements, sizes and flags.
// No core, CUDA or framework types, so the .cu files include nothing but this and CUDA.

#include <cstdint>

namespace attnscope::cuda {

// Element type codes shared by host and kernels (same order as core DType).
enum class ElemType : int { fp32 = 0, fp16 = 1, bf16 = 2 };

struct FlashParams {
  const void* q = nullptr;  // [B, H, Lq, D]
  const void* k = nullptr;  // [B, Hkv, Lkv, D]
  const void* v = nullptr;  // [B, Hkv, Lkv, D]
  void* o = nullptr;        // [B, H, Lq, D], same type as q
  float* lse = nullptr;     // [B, H, Lq], natural log of sum(exp(scale * s)); -inf for rows with no key
  const uint8_t* mask = nullptr;  // dense only: 1 = attend; plane [Lq, Lkv] per (b, h) or shared

  int64_t q_batch_stride = 0, q_head_stride = 0, q_row_stride = 0;
  int64_t k_batch_stride = 0, k_head_stride = 0, k_row_stride = 0;
  int64_t v_batch_stride = 0, v_head_stride = 0, v_row_stride = 0;
  int64_t o_batch_stride = 0, o_head_stride = 0, o_row_stride = 0;
  int64_t mask_batch_stride = 0, mask_head_stride = 0, mask_row_stride = 0;  // 0: broadcast

  int batch = 0, heads = 0, kv_heads = 0;
  int64_t seq_q = 0, seq_kv = 0;
  int head_dim = 0;  // the real D; the instance pads to its bucket
  float scale = 1.f;
  float scale_log2 = 1.f;  // scale * log2(e): the kernels use exp2

  ElemType dtype = ElemType::fp16;
  int mask_kind = 0;  // TileMask
  int64_t mask_width = 0;
};

// cuda.flash's backward (flash_bwd.cu). `fwd` is the forward's parameters: o and lse are what the
// forward wrote and are read here. dO (g) and dQ have Q's strides, dK and dV have K's; the
// gradients are written in the input type, accumulated in fp32.
struct FlashBwdParams {
  FlashParams fwd;
  const void* g = nullptr;  // dO = G, [B, H, Lq, D]
  void* dq = nullptr;       // [B, H, Lq, D]
  void* dk = nullptr;       // [B, Hkv, Lkv, D]
  void* dv = nullptr;       // [B, Hkv, Lkv, D]
};

// The softmax backward of the materialising path (cuda.math, pass = train), in place: ds holds
// dP = dO V^T on entry and dS = P * (dP - delta) on return, delta_i = dO_i . O_i. probs, ds are
// [B, H, Lq, Lkv]; o, g are [B, H, Lq, D]; all in the input type, the arithmetic in fp32. P is
// zero where a key is masked, so dS is too.
struct SoftmaxBackwardParams {
  const void* probs = nullptr;
  void* ds = nullptr;
  const void* o = nullptr;
  const void* g = nullptr;
  int batch = 0, heads = 0;
  int64_t seq_q = 0, seq_kv = 0, head_dim = 0;
  ElemType dtype = ElemType::fp16;
};

// The softmax of the materialising path over one chunk of query rows [row0, row0 + rows):
// P = softmax(S + bias) with structured masks applied by index. S and P are [B, H, rows, Lkv]
// in the input type; bias (dense only) is [planes, rows, Lkv] with planes 1 or B x H.
struct SoftmaxParams {
  const void* scores = nullptr;
  void* probs = nullptr;
  const void* bias = nullptr;
  int64_t bias_plane_stride = 0;  // 0: broadcast
  int batch = 0, heads = 0;
  int64_t rows = 0, row0 = 0;
  int64_t seq_q = 0, seq_kv = 0;
  ElemType dtype = ElemType::fp16;
  int mask_kind = 0;  // TileMask
  int64_t mask_width = 0;
};

// Dense boolean mask rows [row0, row0 + rows) of every plane to an additive mask in the input
// type: 0 where true, -inf where false. mask is [planes, Lq, Lkv], bias [planes, rows, Lkv].
struct MaskToBiasParams {
  const uint8_t* mask = nullptr;
  void* bias = nullptr;
  int64_t planes = 0, rows = 0, row0 = 0, seq_q = 0, seq_kv = 0;
  ElemType dtype = ElemType::fp16;
};

}  // namespace attnscope::cuda
