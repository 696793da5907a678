// CUDA SDPA checks per kernel and torch version, from shared/reference/torch-sdpa.md §3.1-3.4.
// Check order within a kernel follows the newest source (can_use_flash_attention,
// can_use_mem_efficient_attention, can_use_cudnn_attention in cuda/sdp_utils.cpp); messages are
// the 2.15 binary's strings unless a range says otherwise.
#include <string>

#include "core/torch_dispatch/sdpa_rules_detail.h"

namespace attnscope::torch_dispatch::detail {

namespace {

using R = RuleInput;
using Msg = std::optional<std::string>;

bool isHalf(DType d) { return d == DType::fp16 || d == DType::bf16; }
bool inRange(ComputeCapability cc, int lo, int hi) { return cc.number() >= lo && cc.number() <= hi; }

Msg archMessage(const R& in, const char* who, const char* range) {
  return std::string(who) + " only supports gpu architectures in the range " + range + ". Attempting to run on a sm " +
         smText(in.target.capability) + " gpu.";
}

Msg sameHeads(const R& in, bool gqa_supported) {
  if (!kvHeadsDiffer(in.call)) return std::nullopt;
  if (gqa_supported && in.call.enable_gqa && in.call.q_heads % in.call.kv_heads == 0) return std::nullopt;
  return "For dense input, both fused kernels require query, key and value to have the same num_heads. Query.sizes(): " +
         sizesText(in.call, 'q') + ", Key.sizes(): " + sizesText(in.call, 'k') + ", Value.sizes(): " +
         sizesText(in.call, 'v') + " instead.";
}

Msg dtypeMessage(const R& in, const char* allowed) {
  const std::string t = torchDTypeName(in.call.dtype);
  return std::string("Expected query, key and value to all be of dtype: {") + allowed + "}. Got Query dtype: " + t +
         ", Key dtype: " + t + ", and Value dtype: " + t + " instead.";
}

std::string dims(const SdpaCall& c) {
  return "Got Query.size(-1): " + std::to_string(c.head_dim) + ", Key.size(-1): " + std::to_string(c.head_dim) +
         ", Value.size(-1): " + std::to_string(c.head_dim_v) + " instead.";
}

}  // namespace

std::vector<SdpaRule> cudaRules() {
  const auto F = SdpaKernel::flash;
  const auto E = SdpaKernel::efficient;
  const auto C = SdpaKernel::cudnn;
  const auto cuda = TorchDevice::cuda;
  return {
      // ---- flash (§3.2) ----
      {"flash.attn_mask", F, cuda, between(0, 3), "no attn_mask: flash never takes a mask tensor",
       "sdp_utils_cpp.h check_for_attn_mask [src][bin]",
       [](const R& in) -> Msg {
         if (!in.call.hasMaskTensor()) return std::nullopt;
         return "Both fused kernels do not support non-null attn_mask.";
       }},
      {"flash.attn_mask", F, cuda, from(4), "no attn_mask: flash never takes a mask tensor",
       "sdp_utils_cpp.h check_for_attn_mask [src][bin]",
       [](const R& in) -> Msg {
         if (!in.call.hasMaskTensor()) return std::nullopt;
         return "Flash Attention does not support non-null attn_mask.";
       }},
      {"flash.head_dim", F, cuda, between(0, 1), "FA1: head_dim equal for q, k, v, a multiple of 8 and <= 128",
       "cuda/sdp_utils.cpp check_head_dim_size (FA1) [src]",
       [](const R& in) -> Msg {
         const auto& c = in.call;
         if (c.head_dim == c.head_dim_v && c.head_dim % 8 == 0 && c.head_dim <= 128) return std::nullopt;
         return "Flash attention requires last dimension of inputs to be divisible by 8 and less than or equal to "
                "128. " + dims(c);
       }},
      {"flash.head_dim", F, cuda, from(2), "FA2: head_dim equal for q, k, v and <= 256 (any value: padded to a multiple of 8)",
       "cuda/sdp_utils.cpp check_head_dim_size_flash [src][bin]",
       [](const R& in) -> Msg {
         const auto& c = in.call;
         if (c.head_dim == c.head_dim_v && c.head_dim <= 256) return std::nullopt;
         return "Flash attention requires q,k,v to have the same last dimension and to be less than or equal to 256. " +
                dims(c);
       }},
      {"flash.arch", F, cuda, between(0, 0), "GPU sm75 or sm8x", "cuda/sdp_utils.h check_gpu_sm75_or_greater [src]",
       [](const R& in) -> Msg {
         const auto cc = in.target.capability;
         if (cc.number() == 75 || cc.major == 8) return std::nullopt;
         return "Flash attention only supports sm75 and sm8x gpu architectures. Attempting to run on a sm " + smText(cc) +
                " gpu.";
       }},
      {"flash.arch", F, cuda, between(1, 1), "GPU in [sm75, sm90]", "cuda/sdp_utils.cpp check_flash_attention_hardware_support [src]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 75, 90) ? std::nullopt : archMessage(in, "Flash attention", "[sm75, sm90]");
       }},
      {"flash.arch", F, cuda, between(2, 6), "GPU in [sm80, sm90]", "cuda/sdp_utils.cpp check_flash_attention_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 90) ? std::nullopt : archMessage(in, "Flash attention", "[sm80, sm90]");
       }},
      {"flash.arch", F, cuda, between(7, 7), "GPU in [sm80, sm120]", "cuda/sdp_utils.cpp check_flash_attention_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 120) ? std::nullopt : archMessage(in, "Flash attention", "[sm80, sm120]");
       }},
      {"flash.arch", F, cuda, from(8), "GPU in [sm80, sm121]", "cuda/sdp_utils.cpp check_flash_attention_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 121) ? std::nullopt : archMessage(in, "Flash attention", "[sm80, sm121]");
       }},
      {"flash.training_sm86_89", F, cuda, between(1, 1), "training on sm86-sm89 needs head_dim <= 64",
       "cuda/sdp_utils.cpp check_requires_grad_and_head_dim_gt64_and_sm_ge86_lt90 [src]",
       [](const R& in) -> Msg {
         if (!in.target.requires_grad || !inRange(in.target.capability, 86, 89) || in.call.head_dim <= 64) return std::nullopt;
         return "Flash attention currently doesn't support training with head_dim greater than 64 on sm86 or newer.";
       }},
      {"flash.training_sm86_89", F, cuda, between(2, 7),
       "training on sm86-sm89: not head_dim in (192, 224], nor head_dim > 224 with dropout",
       "cuda/sdp_utils.cpp check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89 [src][bin]",
       [](const R& in) -> Msg {
         const int64_t d = in.call.head_dim;
         if (!in.target.requires_grad || !inRange(in.target.capability, 86, 89)) return std::nullopt;
         // cond1: D in (192, 224]; cond2: D > 224 with dropout (the upstream check's own two).
         if (!((d > 192 && d <= 224) || (d > 224 && in.call.dropout_p > 0.0))) return std::nullopt;
         return "Flash attention currently doesn't support training with head_dim ∈ (192, 224] or (head_dim ∈ (224, 256] and dropout > 0.0) on SM86-SM89.";
       }},
      {"flash.training_sm86_89", F, cuda, from(8),
       "training on sm86-sm89 or sm120-sm121: not head_dim in (192, 224], nor head_dim > 224 with dropout",
       "cuda/sdp_utils.cpp check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89_or_120_121 [src][bin]",
       [](const R& in) -> Msg {
         const int64_t d = in.call.head_dim;
         const auto cc = in.target.capability;
         if (!in.target.requires_grad || !(inRange(cc, 86, 89) || inRange(cc, 120, 121))) return std::nullopt;
         // cond1: D in (192, 224]; cond2: D > 224 with dropout (the upstream check's own two).
         if (!((d > 192 && d <= 224) || (d > 224 && in.call.dropout_p > 0.0))) return std::nullopt;
         return "Flash attention currently doesn't support training with head_dim ∈ (192, 224] or (head_dim ∈ (224, 256] and dropout > 0.0) on SM86-SM89 or SM120-SM121.";
       }},
      {"flash.causal_non_square", F, cuda, from(2), "is_causal=True needs seq_q == seq_kv (FA2 aligns causal bottom-right)",
       "cuda/sdp_utils.cpp check_flash_causal_non_square_seqlens [src][bin]",
       [](const R& in) -> Msg {
         if (!in.call.isCausal() || in.call.seq_q == in.call.seq_kv) return std::nullopt;
         return "Flash attention does not support the is_causal flag when seqlen_q != seqlen_k. Got seqlen_q: " +
                std::to_string(in.call.seq_q) + " seqlen_k: " + std::to_string(in.call.seq_kv) + " instead.";
       }},
      {"flash.heads", F, cuda, between(0, 4), "same number of heads for q, k, v (no enable_gqa before 2.5)",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense [src]", [](const R& in) { return sameHeads(in, false); }},
      {"flash.heads", F, cuda, from(5), "same heads, or enable_gqa with q_heads a multiple of kv_heads",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=true> [src][bin]",
       [](const R& in) { return sameHeads(in, true); }},
      {"flash.dtype", F, cuda, from(0), "fp16, or bf16 on sm80+ (no fp32)", "cuda/sdp_utils.cpp check_tensor_dtype(flash_dtypes) [src][bin]",
       [](const R& in) -> Msg {
         const bool bf16_ok = in.target.capability.major >= 8;
         if (in.call.dtype == DType::fp16 || (in.call.dtype == DType::bf16 && bf16_ok)) return std::nullopt;
         return dtypeMessage(in, bf16_ok ? "Half, BFloat16" : "Half");
       }},

      // ---- memory-efficient (§3.3) ----
      {"efficient.arch", E, cuda, between(0, 0), "GPU sm50 or newer", "cuda/sdp_utils.cpp check_gpu_sm50_or_greater [src]",
       [](const R& in) -> Msg {
         if (in.target.capability.number() >= 50) return std::nullopt;
         return "Mem Efficient Attention only supports sm5x or newer. Attempting to run on a sm " +
                smText(in.target.capability) + " gpu.";
       }},
      {"efficient.arch", E, cuda, between(1, 6), "GPU in [sm50, sm90]", "cuda/sdp_utils.cpp check_mem_efficient_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 50, 90) ? std::nullopt : archMessage(in, "Mem Efficient Attention", "[sm50, sm90]");
       }},
      {"efficient.arch", E, cuda, between(7, 7), "GPU in [sm50, sm120]", "cuda/sdp_utils.cpp check_mem_efficient_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 50, 120) ? std::nullopt : archMessage(in, "Mem Efficient Attention", "[sm50, sm120]");
       }},
      {"efficient.arch", E, cuda, from(8), "GPU in [sm50, sm121]", "cuda/sdp_utils.cpp check_mem_efficient_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 50, 121) ? std::nullopt : archMessage(in, "Mem Efficient Attention", "[sm50, sm121]");
       }},
      {"efficient.head_dim_alignment", E, cuda, from(0),
       "head_dim a multiple of the GEMM alignment: 8 for fp16/bf16 on sm70+, 4 for fp32 on sm80+, else 1",
       "cuda/sdp_utils.cpp check_head_dim_size_mem_efficient + minimum_gemm_alignment [src][bin]",
       [](const R& in) -> Msg {
         const auto& c = in.call;
         const int64_t a = efficientAlignment(c.dtype, in.target.capability);
         if (c.head_dim > 0 && c.head_dim_v > 0 && c.head_dim % a == 0 && c.head_dim_v % a == 0) return std::nullopt;
         return "Mem efficient attention requires last dimension of inputs to be divisible by " + std::to_string(a) + ". " +
                dims(c);
       }},
      {"efficient.attn_mask", E, cuda, between(0, 0), "no attn_mask (masks supported from 2.1, PR #104310)",
       "sdp_utils_cpp.h check_for_attn_mask [src]",
       [](const R& in) -> Msg {
         if (!in.call.hasMaskTensor()) return std::nullopt;
         return "Both fused kernels do not support non-null attn_mask.";
       }},
      {"efficient.dropout", E, cuda, between(0, 0), "dropout_p == 0 (dropout supported from 2.1)",
       "cuda/sdp_utils.h check_for_dropout (2.0) [src]",
       [](const R& in) -> Msg {
         if (in.call.dropout_p == 0.0) return std::nullopt;
         return std::string("Mem_efficient does not support non_zero dropout.");
       }},
      {"efficient.deterministic", E, cuda, between(0, 0), "not under torch.use_deterministic_algorithms(True)",
       "cuda/sdp_utils.cpp check_requires_grad_and_nested / deterministic check (2.0) [src]",
       [](const R& in) -> Msg {
         if (!in.target.deterministic) return std::nullopt;
         return "Memory Efficient attention is not deterministic.";
       }},
      {"efficient.sm86_head_dim_128", E, cuda, between(0, 0), "not head_dim 128 on sm86",
       "cuda/sdp_utils.h check_head_dim_gt64_and_sm_ge86 (2.0) [src]",
       [](const R& in) -> Msg {
         if (in.target.capability.number() != 86 || in.call.head_dim != 128) return std::nullopt;
         return "Memory Efficient attention does not support head_dim 128 on sm86.";
       }},
      {"efficient.heads", E, cuda, between(0, 4), "same number of heads for q, k, v (no enable_gqa before 2.5)",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense [src]", [](const R& in) { return sameHeads(in, false); }},
      {"efficient.heads", E, cuda, between(5, 14), "same number of heads for q, k, v (enable_gqa not supported)",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=false> (S2.5.1) [src]",
       [](const R& in) { return sameHeads(in, false); },
       "efficient with enable_gqa: 2.5-2.6 no (S2.5.1), newest source yes; the first version that accepts it is not "
       "pinned by the reference (2.7-2.14 assumed no)"},
      {"efficient.heads", E, cuda, from(15), "same heads, or enable_gqa with q_heads a multiple of kv_heads",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=true> (newest source) [src]",
       [](const R& in) { return sameHeads(in, true); }},
      {"efficient.dtype", E, cuda, between(0, 0), "fp16, fp32 or bf16", "cuda/sdp_utils.cpp check_tensor_dtype [src]",
       [](const R&) -> Msg { return std::nullopt; }},
      {"efficient.dtype", E, cuda, between(1, 2), "fp16, fp32 or bf16; no bf16 on sm5x",
       "cuda/sdp_utils.cpp check_tensor_dtype(sm50_mem_efficient_dtypes) (2.1) [src]",
       [](const R& in) -> Msg {
         if (in.call.dtype != DType::bf16 || in.target.capability.major != 5) return std::nullopt;
         return dtypeMessage(in, "Half, Float");
       },
       "the reference pins sm5x for 2.1 and sm < 80 from 2.3; 2.2 is assumed like 2.1"},
      {"efficient.dtype", E, cuda, from(3), "fp16 or fp32; bf16 only on sm80+",
       "cuda/sdp_utils.cpp check_tensor_dtype(less_than_sm80_mem_efficient_dtypes) [src][bin]",
       [](const R& in) -> Msg {
         if (in.call.dtype != DType::bf16 || in.target.capability.major >= 8) return std::nullopt;
         return dtypeMessage(in, "Half, Float");
       }},

      // ---- cuDNN (§3.4) ----
      // Before 2.3 SDPA has no cuDNN backend at all (SDPBackend gains CUDNN_ATTENTION in 2.3's
      // dispatch, reference §2 and §6.3): forcing it leaves no kernel.
      {"cudnn.exists", C, cuda, between(0, 2), "torch 2.3 or newer (no cuDNN attention before)",
       "reference §2 (2.0-2.2 order: flash, efficient, math) and §6.3 [src]",
       [](const R&) -> Msg { return "this torch release has no cuDNN attention backend (it arrived in 2.3)."; }},
      {"cudnn.env_gate", C, cuda, between(3, 4), "only with TORCH_CUDNN_SDPA_ENABLED=1",
       "cuda/sdp_utils.cpp check_cudnn_env (S2.3) [src]",
       [](const R& in) -> Msg {
         if (in.target.env_cudnn_sdpa_enabled) return std::nullopt;
         return "cuDNN SDPA is only used with TORCH_CUDNN_SDPA_ENABLED=1 in this release (reference §3.4; no message).";
       }},
      {"cudnn.arch", C, cuda, between(3, 6), "GPU in [sm80, sm90]", "cuda/sdp_utils.cpp check_cudnn_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 90) ? std::nullopt : archMessage(in, "cuDNN MHA", "[sm80, sm90]");
       }},
      {"cudnn.arch", C, cuda, between(7, 7), "GPU in [sm80, sm120]", "cuda/sdp_utils.cpp check_cudnn_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 120) ? std::nullopt : archMessage(in, "cuDNN MHA", "[sm80, sm120]");
       }},
      {"cudnn.arch", C, cuda, from(8), "GPU in [sm80, sm121]", "cuda/sdp_utils.cpp check_cudnn_hardware_support [src][bin]",
       [](const R& in) -> Msg {
         return inRange(in.target.capability, 80, 121) ? std::nullopt : archMessage(in, "cuDNN MHA", "[sm80, sm121]");
       }},
      {"cudnn.version", C, cuda, from(5), "built with cuDNN 9.0 or newer", "cuda/sdp_utils.cpp (cuDNN >= 9.0 compiled) [src]",
       [](const R& in) -> Msg {
         if (in.target.cudnn.major >= 9) return std::nullopt;
         return "cuDNN attention needs cuDNN 9.0 or newer; torch has cuDNN " + in.target.cudnn.text() + ".";
       }},
      {"cudnn.deterministic", C, cuda, from(5), "not under torch.use_deterministic_algorithms(True)",
       "cuda/sdp_utils.cpp check_cudnn_deterministic [src][bin]",
       [](const R& in) -> Msg {
         if (!in.target.deterministic) return std::nullopt;
         return "cuDNN SDPA is not deterministic.";
       }},
      {"cudnn.dtype", C, cuda, from(5), "fp16 or bf16 (no fp32)", "cuda/sdp_utils.cpp check_dtypes_low_precision [src][bin]",
       [](const R& in) -> Msg {
         if (isHalf(in.call.dtype)) return std::nullopt;
         return "cuDNN attention only supports float16 and bfloat16, got " + torchDTypeName(in.call.dtype) + ".";
       }},
      {"cudnn.head_dim", C, cuda, between(4, 4), "head_dim a multiple of 8 and <= 128", "cuda/sdp_utils.cpp check_cudnn_tensor_shapes (2.4 binary strings) [bin]",
       [](const R& in) -> Msg {
         const auto& c = in.call;
         if (c.head_dim % 8 != 0 || c.head_dim_v % 8 != 0 || c.head_dim > 128 || c.head_dim_v > 128)
           return std::string("head_dim should be a multiple of 8 and no more than 128");
         return std::nullopt;
       },
       "2.4's cuDNN head_dim check is known only from its message (\"... no more than 128/256\"); the 256 case is not modelled"},
      {"cudnn.head_dim", C, cuda, from(5), "head_dim a multiple of 8 and <= 128 (256 on sm90/sm10x with cuDNN > 9.22, 2.15)",
       "cuda/sdp_utils.cpp check_cudnn_tensor_shapes [src][bin]",
       [](const R& in) -> Msg {
         const auto& c = in.call;
         const auto cc = in.target.capability;
         if (c.head_dim % 8 != 0 || c.head_dim_v % 8 != 0) return std::string("head_dim should be a multiple of 8");
         const bool wide = in.target.version >= V(15) && (cc.major == 9 || cc.major == 10) &&
                           in.target.cudnn > CudnnVersion{9, 22, 0};
         const int64_t limit = wide ? 256 : 128;
         if (c.head_dim <= limit && c.head_dim_v <= limit) return std::nullopt;
         return "head_dim should be no more than " + std::to_string(limit);
       }},
      {"cudnn.seq_kv", C, cuda, from(5), "seq_kv != 1", "cuda/sdp_utils.cpp check_cudnn_tensor_shapes [src][bin]",
       [](const R& in) -> Msg {
         if (in.call.seq_kv != 1) return std::nullopt;
         return std::string("cudnn SDPA does not support key/value sequence length 1.");
       }},
      {"cudnn.batch_heads_limit", C, cuda, from(15), "batch and heads <= 65535", "cuda/sdp_utils.cpp check_cudnn_tensor_shapes (newest) [src][bin]",
       [](const R& in) -> Msg {
         if (in.call.batch <= 65535 && in.call.q_heads <= 65535) return std::nullopt;
         return std::string("cuDNN SDPA does not support batch size or num_heads greater than 65535");
       }},
      {"cudnn.heads", C, cuda, between(5, 14), "same number of heads for q, k, v",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense [src]", [](const R& in) { return sameHeads(in, false); },
       "cuDNN with enable_gqa: allowed in the newest source; the first version is not pinned by the reference "
       "(2.5-2.14 assumed no)"},
      {"cudnn.heads", C, cuda, from(15), "same heads, or enable_gqa (GQA and MQA allowed)",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=true> (newest) [src]",
       [](const R& in) { return sameHeads(in, true); }},
  };
}

}  // namespace attnscope::torch_dispatch::detail
