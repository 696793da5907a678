// CPU SDPA checks (select_sdp_backend_cpp in transformers/sdp_utils_cpp.cpp), from
// shared/reference/torch-sdpa.md §3.6, measured with every release's PyPI wheel on the CPU
// (scripts/measure_torch_release.sh: the kernel that ran and torch._fused_sdp_choice) [cpu]:
// masks and fp16 reach CPU flash from 2.3 (2.2 is like 2.1), enable_gqa from 2.9.
#include <string>

#include "core/torch_dispatch/sdpa_rules_detail.h"

namespace attnscope::torch_dispatch::detail {

std::vector<SdpaRule> cpuRules() {
  using R = RuleInput;
  using Msg = std::optional<std::string>;
  const auto F = SdpaKernel::flash;
  const auto cpu = TorchDevice::cpu;
  return {
      {"cpu_flash.exists", F, cpu, between(0, 0), "torch 2.0 has no CPU flash kernel: CPU always runs math",
       "attention.cpp _fused_sdp_choice_cpp absent in 2.0 [src]",
       [](const R&) -> Msg { return std::string("torch 2.0 has no fused SDPA kernel on CPU (always math)."); }},
      {"cpu_flash.dropout", F, cpu, from(1), "dropout_p == 0", "sdp_utils_cpp.h check_for_dropout [src][cpu]",
       [](const R& in) -> Msg {
         if (in.call.dropout_p == 0.0) return std::nullopt;
         return std::string("Both fused kernels do not support non-zero dropout.");
       }},
      {"cpu_flash.attn_mask", F, cpu, between(1, 2), "no attn_mask", "sdp_utils_cpp.h check_for_attn_mask [src][cpu]",
       [](const R& in) -> Msg {
         if (!in.call.hasMaskTensor()) return std::nullopt;
         return std::string("Both fused kernels do not support non-null attn_mask.");
       }},
      {"cpu_flash.attn_mask_shape", F, cpu, from(3), "attn_mask 2-D or 4-D, bool or float (3-D goes to math)",
       "sdp_utils_cpp.h check_attn_mask_shape [src][cpu]",
       [](const R& in) -> Msg {
         if (!in.call.hasMaskTensor() || in.call.mask_shape.size() == 2 || in.call.mask_shape.size() == 4) return std::nullopt;
         return std::string("attn_mask must be 2-D or 4-D for the fused CPU kernel.");
       }},
      {"cpu_flash.heads", F, cpu, between(1, 8), "same number of heads for q, k, v (enable_gqa not supported)",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=false> [src][cpu]",
       [](const R& in) -> Msg {
         if (!kvHeadsDiffer(in.call)) return std::nullopt;
         return "For dense input, both fused kernels require query, key and value to have the same num_heads. "
                "Query.sizes(): " + sizesText(in.call, 'q') + ", Key.sizes(): " + sizesText(in.call, 'k') +
                ", Value.sizes(): " + sizesText(in.call, 'v') + " instead.";
       }},
      {"cpu_flash.heads", F, cpu, from(9), "same heads, or enable_gqa with q_heads a multiple of kv_heads",
       "sdp_utils_cpp.h check_batch_size_and_num_heads_dense<supports_gqa=true> [src][cpu]",
       [](const R& in) -> Msg {
         if (!kvHeadsDiffer(in.call) || (in.call.enable_gqa && in.call.q_heads % in.call.kv_heads == 0)) return std::nullopt;
         return std::string("For dense input, both fused kernels require query, key and value to have the same num_heads.");
       }},
      {"cpu_flash.dtype", F, cpu, between(1, 2), "fp32, fp64 or bf16 (fp16 goes to math)",
       "sdp_utils_cpp.cpp check_tensor_dtype(cpp_supported_flash_dtypes) [src][cpu]",
       [](const R& in) -> Msg {
         if (in.call.dtype != DType::fp16) return std::nullopt;
         return std::string("Expected query, key and value to all be of dtype: {Double, Float, BFloat16}. Got Query "
                            "dtype: Half, Key dtype: Half, and Value dtype: Half instead.");
       }},
      {"cpu_flash.dtype", F, cpu, from(3), "fp32, fp64, bf16 or fp16", "sdp_utils_cpp.cpp check_tensor_dtype [src][cpu]",
       [](const R&) -> Msg { return std::nullopt; }},
  };
}

}  // namespace attnscope::torch_dispatch::detail
