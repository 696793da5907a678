// The explainer's CUDA side, pinned rule by rule against shared/reference/torch-sdpa.md (issue 25):
// every CUDA check of flash, efficient and cuDNN at the first release it applies to, the last, and
// the release beyond; every arch-dependent check on sm70 ... sm121; and the priority order with
// its cuDNN gates per release (the memory formulas and suggestions: test_explain_cuda_memory.cpp).
// Expected values are written from the reference's tables and formulas (section cited per row),
// never computed by the code under test, so a rule cut short by one release or one arch fails a
// named row.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/torch_dispatch/sdpa_explain.h"
#include "tests/torch_dispatch/cuda_table.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;
using namespace attnscope::torch_dispatch::cuda_table;

namespace {

// A call every CUDA kernel takes on a GPU it supports: B1 H8 L=S=256 D64 fp16, no mask.
SdpaCall baseCall() {
  SdpaCall c;
  c.batch = 1;
  c.q_heads = c.kv_heads = 8;
  c.seq_q = c.seq_kv = 256;
  c.head_dim = c.head_dim_v = 64;
  c.dtype = f16;
  return c;
}

// What a row changes on the base call and target (nullptr: nothing).
using Tweak = void (*)(SdpaCall&, TorchTarget&);

// explainSdpa's verdict on `k` for this call (the order lists every kernel of the release, so each
// one is judged whether or not an earlier one wins).
KernelVerdict judge(K k, const SdpaCall& call, const TorchTarget& t) {
  const auto x = explainSdpa(WorkloadSpec{}, t, call, ExplainOptions{false});
  for (const auto& v : x.verdicts)
    if (v.kernel == k && v.via.empty()) return v;
  ADD_FAILURE() << toString(k) << " was not judged for torch " << t.version.text();
  return {};
}

// Tweaks shared by the tables.
void boolMask(SdpaCall& c, TorchTarget&) {
  c.mask = SdpaMaskPassing::bool_tensor;
  c.mask_shape = {1, 1, c.seq_q, c.seq_kv};
}
void bf16(SdpaCall& c, TorchTarget&) { c.dtype = b16; }
void fp32(SdpaCall& c, TorchTarget&) { c.dtype = f32; }
void gqa(SdpaCall& c, TorchTarget&) {
  c.kv_heads = 2;
  c.enable_gqa = true;
}
void gqa8of3(SdpaCall& c, TorchTarget&) {
  c.kv_heads = 3;
  c.enable_gqa = true;
}
void cudnnEnv(SdpaCall&, TorchTarget& t) { t.env_cudnn_sdpa_enabled = true; }
void deterministic(SdpaCall&, TorchTarget& t) { t.deterministic = true; }
void causalNonSquare(SdpaCall& c, TorchTarget&) {
  c.mask = SdpaMaskPassing::is_causal;
  c.seq_q = 128;
}
void causalSquare(SdpaCall& c, TorchTarget&) { c.mask = SdpaMaskPassing::is_causal; }
template <int D>
void dim(SdpaCall& c, TorchTarget&) {
  c.head_dim = c.head_dim_v = D;
}
template <int D>
void dimFp32(SdpaCall& c, TorchTarget&) {
  c.head_dim = c.head_dim_v = D;
  c.dtype = f32;
}
template <int D>
void train(SdpaCall& c, TorchTarget& t) {
  c.head_dim = c.head_dim_v = D;
  t.requires_grad = true;
}
// Training with dropout: on sm86-89 (and sm120-121 from 2.8) §3.2 refuses head_dim in (192, 224]
// and, with dropout, beyond 224.
template <int D>
void trainDropout(SdpaCall& c, TorchTarget& t) {
  c.head_dim = c.head_dim_v = D;
  c.dropout_p = 0.1;
  t.requires_grad = true;
}
template <int D>
void envDim(SdpaCall& c, TorchTarget& t) {
  c.head_dim = c.head_dim_v = D;
  t.env_cudnn_sdpa_enabled = true;
}
template <int Major, int Minor, int Patch>
void cudnnAt(SdpaCall&, TorchTarget& t) {
  t.cudnn = {Major, Minor, Patch};
}
template <int Major, int Minor, int Patch>
void dim256CudnnAt(SdpaCall& c, TorchTarget& t) {
  c.head_dim = c.head_dim_v = 256;
  t.cudnn = {Major, Minor, Patch};
}

// ---- per-release boundaries of each rule (§3.2-§3.4) ----

struct RuleCase {
  const char* what;
  const char* torch;
  int sm;
  K kernel;
  Tweak tweak;
  const char* refused_by;    // "": the kernel must be usable
  const char* message = "";  // a part of torch's message that must be quoted
};

class CudaRules : public testing::TestWithParam<RuleCase> {};

TEST_P(CudaRules, EachRuleHoldsFromItsFirstToItsLastRelease) {
  const RuleCase& c = GetParam();
  SdpaCall call = baseCall();
  TorchTarget t = cudaTarget(c.torch, c.sm);
  if (c.tweak) c.tweak(call, t);
  const KernelVerdict v = judge(c.kernel, call, t);
  if (std::string(c.refused_by).empty()) {
    EXPECT_TRUE(v.usable) << c.what << ": refused by " << v.rule_id << " (" << v.torch_message << ")";
  } else {
    EXPECT_FALSE(v.usable) << c.what;
    EXPECT_EQ(v.rule_id, c.refused_by) << c.what << ": " << v.torch_message;
  }
  EXPECT_NE(v.torch_message.find(c.message), std::string::npos) << c.what << ": " << v.torch_message;
}

INSTANTIATE_TEST_SUITE_P(
    Flash, CudaRules,
    testing::Values(
        // attn_mask: rejected in every release; the message changes at 2.4.
        RuleCase{"flash mask 2.0 (old message)", "2.0", 80, K::flash, boolMask, "flash.attn_mask",
                 "Both fused kernels do not support non-null attn_mask."},
        RuleCase{"flash mask 2.3 (last old message)", "2.3", 80, K::flash, boolMask, "flash.attn_mask",
                 "Both fused kernels do not support non-null attn_mask."},
        RuleCase{"flash mask 2.4 (first new message)", "2.4", 80, K::flash, boolMask, "flash.attn_mask",
                 "Flash Attention does not support non-null attn_mask."},
        RuleCase{"flash mask 2.15", "2.15", 80, K::flash, boolMask, "flash.attn_mask",
                 "Flash Attention does not support non-null attn_mask."},
        // head_dim: FA1 (2.0, 2.1) % 8 and <= 128; FA2 (2.2+) q=k=v and <= 256, any value.
        RuleCase{"flash FA1 D4 2.0", "2.0", 80, K::flash, dim<4>, "flash.head_dim"},
        RuleCase{"flash FA1 D4 2.1 (last FA1)", "2.1", 80, K::flash, dim<4>, "flash.head_dim"},
        RuleCase{"flash FA2 D4 2.2 (padded)", "2.2", 80, K::flash, dim<4>, ""},
        RuleCase{"flash FA1 D128 2.1", "2.1", 80, K::flash, dim<128>, ""},
        RuleCase{"flash FA1 D136 2.0", "2.0", 80, K::flash, dim<136>, "flash.head_dim"},
        RuleCase{"flash FA1 D136 2.1", "2.1", 80, K::flash, dim<136>, "flash.head_dim"},
        RuleCase{"flash FA2 D136 2.2 (first FA2)", "2.2", 80, K::flash, dim<136>, ""},
        RuleCase{"flash FA2 D256 2.15", "2.15", 80, K::flash, dim<256>, ""},
        RuleCase{"flash FA2 D264 2.2", "2.2", 80, K::flash, dim<264>, "flash.head_dim"},
        RuleCase{"flash FA2 D264 2.15", "2.15", 80, K::flash, dim<264>, "flash.head_dim"},
        RuleCase{"flash Dv != D 2.1", "2.1", 80, K::flash, [](SdpaCall& c, TorchTarget&) { c.head_dim_v = 32; },
                 "flash.head_dim"},
        RuleCase{"flash Dv != D 2.15", "2.15", 80, K::flash, [](SdpaCall& c, TorchTarget&) { c.head_dim_v = 32; },
                 "flash.head_dim"},
        // is_causal with Lq != Lk: refused from 2.2 (FA2 aligns the diagonal bottom-right).
        RuleCase{"flash causal 128x256 2.1", "2.1", 80, K::flash, causalNonSquare, ""},
        RuleCase{"flash causal 128x256 2.2 (first)", "2.2", 80, K::flash, causalNonSquare, "flash.causal_non_square"},
        RuleCase{"flash causal 128x256 2.15", "2.15", 80, K::flash, causalNonSquare, "flash.causal_non_square"},
        RuleCase{"flash causal square 2.15", "2.15", 80, K::flash, causalSquare, ""},
        // heads (§3.1): enable_gqa exists from 2.5 and flash takes it when Hq % Hkv == 0.
        RuleCase{"flash GQA 2.4 (no enable_gqa)", "2.4", 80, K::flash, gqa, "flash.heads"},
        RuleCase{"flash GQA 2.5.0 (first)", "2.5.0", 80, K::flash, gqa, ""},
        RuleCase{"flash GQA 2.15", "2.15", 80, K::flash, gqa, ""},
        RuleCase{"flash GQA 8/3 heads 2.15", "2.15", 80, K::flash, gqa8of3, "flash.heads"},
        RuleCase{"flash kv heads differ without enable_gqa 2.15", "2.15", 80, K::flash,
                 [](SdpaCall& c, TorchTarget&) { c.kv_heads = 2; }, "flash.heads"},
        // dtype: fp16; bf16 on sm80+; never fp32.
        RuleCase{"flash fp32 2.0", "2.0", 80, K::flash, fp32, "flash.dtype"},
        RuleCase{"flash fp32 2.15", "2.15", 80, K::flash, fp32, "flash.dtype"},
        RuleCase{"flash bf16 sm80 2.0", "2.0", 80, K::flash, bf16, ""},
        RuleCase{"flash bf16 sm80 2.15", "2.15", 80, K::flash, bf16, ""},
        // training: 2.1 refuses head_dim > 64 on sm86-89; from 2.2 the limits are 192/224.
        RuleCase{"flash train D128 sm86 2.0 (no rule yet)", "2.0", 86, K::flash, train<128>, ""},
        RuleCase{"flash train D72 sm86 2.1", "2.1", 86, K::flash, train<72>, "flash.training_sm86_89"},
        RuleCase{"flash train D64 sm86 2.1", "2.1", 86, K::flash, train<64>, ""},
        RuleCase{"flash train D128 sm86 2.2 (2.1's limit gone)", "2.2", 86, K::flash, train<128>, ""},
        RuleCase{"flash train D192 dropout sm89 2.15", "2.15", 89, K::flash, trainDropout<192>, ""},
        RuleCase{"flash train D224 dropout sm89 2.2", "2.2", 89, K::flash, trainDropout<224>, "flash.training_sm86_89"},
        RuleCase{"flash D256 dropout sm86 without grad 2.15", "2.15", 86, K::flash,
                 [](SdpaCall& c, TorchTarget&) {
                   c.head_dim = c.head_dim_v = 256;
                   c.dropout_p = 0.1;
                 },
                 ""}));

INSTANTIATE_TEST_SUITE_P(
    Efficient, CudaRules,
    testing::Values(
        // attn_mask: rejected in 2.0, supported from 2.1 (PR #104310).
        RuleCase{"efficient mask 2.0", "2.0", 80, K::efficient, boolMask, "efficient.attn_mask"},
        RuleCase{"efficient mask 2.1 (first)", "2.1", 80, K::efficient, boolMask, ""},
        RuleCase{"efficient mask 2.15", "2.15", 80, K::efficient, boolMask, ""},
        // deterministic: a check in 2.0 only ("not a check" from 2.1).
        RuleCase{"efficient deterministic 2.0", "2.0", 80, K::efficient, deterministic, "efficient.deterministic"},
        RuleCase{"efficient deterministic 2.1", "2.1", 80, K::efficient, deterministic, ""},
        // GQA: no in 2.5-2.6 (S2.5.1), yes in the newest source.
        RuleCase{"efficient GQA 2.4", "2.4", 80, K::efficient, gqa, "efficient.heads"},
        RuleCase{"efficient GQA 2.5.0", "2.5.0", 80, K::efficient, gqa, "efficient.heads"},
        RuleCase{"efficient GQA 2.6", "2.6", 80, K::efficient, gqa, "efficient.heads"},
        RuleCase{"efficient GQA 2.15", "2.15", 80, K::efficient, gqa, ""},
        RuleCase{"efficient GQA 8/3 heads 2.15", "2.15", 80, K::efficient, gqa8of3, "efficient.heads"},
        // dtype: 2.0 fp16, fp32, bf16 everywhere; 2.3+ bf16 only on sm80+.
        RuleCase{"efficient bf16 sm75 2.0", "2.0", 75, K::efficient, bf16, ""},
        RuleCase{"efficient bf16 sm75 2.3", "2.3", 75, K::efficient, bf16, "efficient.dtype"},
        RuleCase{"efficient bf16 sm75 2.15", "2.15", 75, K::efficient, bf16, "efficient.dtype"},
        RuleCase{"efficient bf16 sm80 2.15", "2.15", 80, K::efficient, bf16, ""},
        RuleCase{"efficient fp32 sm75 2.15", "2.15", 75, K::efficient, fp32, ""},
        // head_dim: no upper bound; Dq and Dv each aligned (§3.3 table).
        RuleCase{"efficient D512 2.15", "2.15", 80, K::efficient, dim<512>, ""},
        RuleCase{"efficient Dv 60 fp16 2.15", "2.15", 80, K::efficient,
                 [](SdpaCall& c, TorchTarget&) { c.head_dim_v = 60; }, "efficient.head_dim_alignment",
                 "divisible by 8"},
        RuleCase{"efficient D6 fp32 sm80 2.15", "2.15", 80, K::efficient, dimFp32<6>, "efficient.head_dim_alignment",
                 "divisible by 4"},
        RuleCase{"efficient D6 fp32 sm75 2.15", "2.15", 75, K::efficient, dimFp32<6>, ""},
        RuleCase{"efficient D128 sm86 2.0", "2.0", 86, K::efficient, dim<128>, "efficient.sm86_head_dim_128"},
        RuleCase{"efficient D128 sm86 2.1 (rule gone)", "2.1", 86, K::efficient, dim<128>, ""}));

INSTANTIATE_TEST_SUITE_P(
    Cudnn, CudaRules,
    testing::Values(
        // 2.3, 2.4: only with TORCH_CUDNN_SDPA_ENABLED=1; 2.3's other constraints are commented out.
        RuleCase{"cudnn without env 2.3", "2.3", 90, K::cudnn, nullptr, "cudnn.env_gate"},
        RuleCase{"cudnn without env 2.4 (last env-gated)", "2.4", 90, K::cudnn, nullptr, "cudnn.env_gate"},
        RuleCase{"cudnn without env 2.5.0 (runtime flag)", "2.5.0", 90, K::cudnn, nullptr, ""},
        RuleCase{"cudnn env 2.3", "2.3", 90, K::cudnn, cudnnEnv, ""},
        RuleCase{"cudnn env fp32 2.3 (dtypes commented out)", "2.3", 90, K::cudnn,
                 [](SdpaCall& c, TorchTarget& t) {
                   c.dtype = f32;
                   t.env_cudnn_sdpa_enabled = true;
                 },
                 ""},
        RuleCase{"cudnn env D4 2.3 (shapes commented out)", "2.3", 90, K::cudnn, envDim<4>, ""},
        RuleCase{"cudnn env D4 2.4 (shape check in the binary)", "2.4", 90, K::cudnn, envDim<4>, "cudnn.head_dim"},
        RuleCase{"cudnn env D128 2.4", "2.4", 90, K::cudnn, envDim<128>, ""},
        RuleCase{"cudnn env seq_kv 1 2.3", "2.3", 90, K::cudnn,
                 [](SdpaCall& c, TorchTarget& t) {
                   c.seq_kv = 1;
                   t.env_cudnn_sdpa_enabled = true;
                 },
                 ""},
        RuleCase{"cudnn env deterministic 2.3", "2.3", 90, K::cudnn,
                 [](SdpaCall&, TorchTarget& t) {
                   t.deterministic = true;
                   t.env_cudnn_sdpa_enabled = true;
                 },
                 ""},
        // 2.5+: cuDNN >= 9.0 compiled, not deterministic, fp16/bf16.
        RuleCase{"cudnn 8.9.7 2.5.0", "2.5.0", 90, K::cudnn, cudnnAt<8, 9, 7>, "cudnn.version"},
        RuleCase{"cudnn 9.0.0 2.5.0", "2.5.0", 90, K::cudnn, cudnnAt<9, 0, 0>, ""},
        RuleCase{"cudnn 8.9.7 2.15", "2.15", 90, K::cudnn, cudnnAt<8, 9, 7>, "cudnn.version"},
        RuleCase{"cudnn deterministic 2.5.0", "2.5.0", 90, K::cudnn, deterministic, "cudnn.deterministic"},
        RuleCase{"cudnn deterministic 2.15", "2.15", 90, K::cudnn, deterministic, "cudnn.deterministic"},
        RuleCase{"cudnn fp32 2.5.0", "2.5.0", 90, K::cudnn, fp32, "cudnn.dtype"},
        RuleCase{"cudnn fp32 2.15", "2.15", 90, K::cudnn, fp32, "cudnn.dtype"},
        RuleCase{"cudnn bf16 2.15", "2.15", 90, K::cudnn, bf16, ""},
        // check_cudnn_tensor_shapes: D % 8 for Dqk and Dv, <= 128; 256 on sm90/sm10x with cuDNN > 9.22.
        RuleCase{"cudnn D4 2.5.0", "2.5.0", 90, K::cudnn, dim<4>, "cudnn.head_dim"},
        RuleCase{"cudnn D128 2.5.0", "2.5.0", 90, K::cudnn, dim<128>, ""},
        RuleCase{"cudnn D136 2.5.0", "2.5.0", 90, K::cudnn, dim<136>, "cudnn.head_dim"},
        RuleCase{"cudnn Dv 60 2.15", "2.15", 90, K::cudnn, [](SdpaCall& c, TorchTarget&) { c.head_dim_v = 60; },
                 "cudnn.head_dim"},
        RuleCase{"cudnn D256 2.12 (cuDNN 9.20 <= 9.22)", "2.12", 90, K::cudnn, dim<256>, "cudnn.head_dim"},
        RuleCase{"cudnn D256 2.15 cuDNN 9.22.0", "2.15", 90, K::cudnn, dim256CudnnAt<9, 22, 0>, "cudnn.head_dim"},
        RuleCase{"cudnn D256 2.15 cuDNN 9.23.0", "2.15", 90, K::cudnn, dim256CudnnAt<9, 23, 0>, ""},
        RuleCase{"cudnn D256 2.15 sm100", "2.15", 100, K::cudnn, dim<256>, ""},
        RuleCase{"cudnn D264 2.15", "2.15", 90, K::cudnn, dim<264>, "cudnn.head_dim"},
        RuleCase{"cudnn D136 sm80 2.15", "2.15", 80, K::cudnn, dim<136>, "cudnn.head_dim"},
        // Lk != 1.
        RuleCase{"cudnn seq_kv 1 2.5.0", "2.5.0", 90, K::cudnn, [](SdpaCall& c, TorchTarget&) { c.seq_kv = 1; },
                 "cudnn.seq_kv"},
        RuleCase{"cudnn seq_kv 1 2.15", "2.15", 90, K::cudnn, [](SdpaCall& c, TorchTarget&) { c.seq_kv = 1; },
                 "cudnn.seq_kv"},
        // B, H <= 65535 (Snew).
        RuleCase{"cudnn batch 65535 2.15", "2.15", 90, K::cudnn, [](SdpaCall& c, TorchTarget&) { c.batch = 65535; },
                 ""},
        RuleCase{"cudnn batch 65536 2.15", "2.15", 90, K::cudnn, [](SdpaCall& c, TorchTarget&) { c.batch = 65536; },
                 "cudnn.batch_heads_limit"},
        RuleCase{"cudnn heads 65536 2.15", "2.15", 90, K::cudnn,
                 [](SdpaCall& c, TorchTarget&) { c.q_heads = c.kv_heads = 65536; }, "cudnn.batch_heads_limit"},
        // heads: GQA and MQA allowed in Snew; 2.5.1's dense check refuses them.
        RuleCase{"cudnn GQA 2.5.0", "2.5.0", 90, K::cudnn, gqa, "cudnn.heads"},
        RuleCase{"cudnn GQA 2.15", "2.15", 90, K::cudnn, gqa, ""}));

// ---- every arch-dependent rule on every arch ----

struct ArchCase {
  const char* what;
  const char* torch;
  K kernel;
  Tweak tweak;
  const char* rule_id;           // the check that must refuse the kernel on `refused`
  std::vector<int> refused;      // archs where rule_id is the first failing check
  std::vector<int> earlier = {}; // archs where an earlier check (earlier_rule) refuses first
  const char* earlier_rule = "";
};

class CudaArchs : public testing::TestWithParam<ArchCase> {};

TEST_P(CudaArchs, RuleRefusesExactlyTheArchsTheReferenceLists) {
  const ArchCase& c = GetParam();
  for (int sm : kArchs) {
    SdpaCall call = baseCall();
    TorchTarget t = cudaTarget(c.torch, sm);
    if (c.tweak) c.tweak(call, t);
    const KernelVerdict v = judge(c.kernel, call, t);
    const std::string where = std::string(c.what) + " on sm" + std::to_string(sm);
    if (has(c.refused, sm)) {
      EXPECT_EQ(v.rule_id, c.rule_id) << where << ": " << v.torch_message;
    } else if (has(c.earlier, sm)) {
      EXPECT_EQ(v.rule_id, c.earlier_rule) << where << ": " << v.torch_message;
    } else {
      EXPECT_TRUE(v.usable) << where << ": refused by " << v.rule_id << " (" << v.torch_message << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Flash, CudaArchs,
    testing::Values(
        // §3.2 arch: 2.0 sm75 or sm8x; 2.1 [sm75, sm90]; 2.2-2.6 [sm80, sm90]; 2.7 [sm80, sm120]; 2.8+ [sm80, sm121].
        ArchCase{"flash arch 2.0", "2.0", K::flash, nullptr, "flash.arch", {70, 90, 100, 120, 121}},
        ArchCase{"flash arch 2.1", "2.1", K::flash, nullptr, "flash.arch", {70, 100, 120, 121}},
        ArchCase{"flash arch 2.2", "2.2", K::flash, nullptr, "flash.arch", {70, 75, 100, 120, 121}},
        ArchCase{"flash arch 2.6", "2.6", K::flash, nullptr, "flash.arch", {70, 75, 100, 120, 121}},
        ArchCase{"flash arch 2.7", "2.7", K::flash, nullptr, "flash.arch", {70, 75, 121}},
        ArchCase{"flash arch 2.8", "2.8", K::flash, nullptr, "flash.arch", {70, 75}},
        ArchCase{"flash arch 2.15", "2.15", K::flash, nullptr, "flash.arch", {70, 75}},
        // §3.2 dtype: bf16 needs sm80+ (sm75 is the one pre-Ampere arch flash ran on).
        ArchCase{"flash bf16 2.1", "2.1", K::flash, bf16, "flash.dtype", {75}, {70, 100, 120, 121}, "flash.arch"},
        ArchCase{"flash fp32 2.15", "2.15", K::flash, fp32, "flash.dtype", {80, 86, 89, 90, 100, 120, 121}, {70, 75},
                 "flash.arch"},
        // §3.2 training: none in 2.0; 2.1 sm86-89 head_dim > 64; 2.2-2.7 sm86-89; 2.8+ also sm120-121.
        ArchCase{"flash train D128 2.0", "2.0", K::flash, train<128>, "flash.training_sm86_89", {},
                 {70, 90, 100, 120, 121}, "flash.arch"},
        ArchCase{"flash train D128 2.1", "2.1", K::flash, train<128>, "flash.training_sm86_89", {86, 89},
                 {70, 100, 120, 121}, "flash.arch"},
        ArchCase{"flash train D256 dropout 2.2", "2.2", K::flash, trainDropout<256>, "flash.training_sm86_89", {86, 89},
                 {70, 75, 100, 120, 121}, "flash.arch"},
        ArchCase{"flash train D256 dropout 2.7", "2.7", K::flash, trainDropout<256>, "flash.training_sm86_89", {86, 89},
                 {70, 75, 121}, "flash.arch"},
        ArchCase{"flash train D256 dropout 2.8", "2.8", K::flash, trainDropout<256>, "flash.training_sm86_89",
                 {86, 89, 120, 121}, {70, 75}, "flash.arch"},
        ArchCase{"flash train D224 dropout 2.15", "2.15", K::flash, trainDropout<224>, "flash.training_sm86_89",
                 {86, 89, 120, 121}, {70, 75}, "flash.arch"},
        ArchCase{"flash train D192 dropout 2.15", "2.15", K::flash, trainDropout<192>, "flash.training_sm86_89", {},
                 {70, 75}, "flash.arch"}));

INSTANTIATE_TEST_SUITE_P(
    Efficient, CudaArchs,
    testing::Values(
        // §3.3 arch: 2.0 sm50+; 2.1-2.6 [sm50, sm90]; 2.7 [sm50, sm120]; 2.8+ [sm50, sm121].
        ArchCase{"efficient arch 2.0", "2.0", K::efficient, nullptr, "efficient.arch", {}},
        ArchCase{"efficient arch 2.1", "2.1", K::efficient, nullptr, "efficient.arch", {100, 120, 121}},
        ArchCase{"efficient arch 2.6", "2.6", K::efficient, nullptr, "efficient.arch", {100, 120, 121}},
        ArchCase{"efficient arch 2.7", "2.7", K::efficient, nullptr, "efficient.arch", {121}},
        ArchCase{"efficient arch 2.8", "2.8", K::efficient, nullptr, "efficient.arch", {}},
        ArchCase{"efficient arch 2.15", "2.15", K::efficient, nullptr, "efficient.arch", {}},
        // minimum_gemm_alignment: fp16/bf16 8 on sm70+; fp32 1 on sm70-75, 4 on sm80+.
        ArchCase{"efficient fp16 D4 2.8", "2.8", K::efficient, dim<4>, "efficient.head_dim_alignment", kArchs},
        ArchCase{"efficient fp16 D12 2.8", "2.8", K::efficient, dim<12>, "efficient.head_dim_alignment", kArchs},
        ArchCase{"efficient fp16 D8 2.8", "2.8", K::efficient, dim<8>, "efficient.head_dim_alignment", {}},
        ArchCase{"efficient fp32 D2 2.8", "2.8", K::efficient, dimFp32<2>, "efficient.head_dim_alignment",
                 {80, 86, 89, 90, 100, 120, 121}},
        ArchCase{"efficient fp32 D4 2.8", "2.8", K::efficient, dimFp32<4>, "efficient.head_dim_alignment", {}},
        // §3.3 dtype: bf16 everywhere in 2.0; only on sm80+ from 2.3.
        ArchCase{"efficient bf16 2.0", "2.0", K::efficient, bf16, "efficient.dtype", {}},
        ArchCase{"efficient bf16 2.3", "2.3", K::efficient, bf16, "efficient.dtype", {70, 75}, {100, 120, 121},
                 "efficient.arch"},
        ArchCase{"efficient bf16 2.15", "2.15", K::efficient, bf16, "efficient.dtype", {70, 75}},
        // §3.3 "other", 2.0: sm86 with head_dim 128.
        ArchCase{"efficient D128 2.0", "2.0", K::efficient, dim<128>, "efficient.sm86_head_dim_128", {86}},
        ArchCase{"efficient D128 2.1", "2.1", K::efficient, dim<128>, "efficient.sm86_head_dim_128", {},
                 {100, 120, 121}, "efficient.arch"}));

INSTANTIATE_TEST_SUITE_P(
    Cudnn, CudaArchs,
    testing::Values(
        // §3.4 arch: sm80-sm90 in 2.3-2.6, [sm80, sm120] in 2.7, [sm80, sm121] from 2.8.
        ArchCase{"cudnn arch 2.3 (env)", "2.3", K::cudnn, cudnnEnv, "cudnn.arch", {70, 75, 100, 120, 121}},
        ArchCase{"cudnn arch 2.4 (env)", "2.4", K::cudnn, cudnnEnv, "cudnn.arch", {70, 75, 100, 120, 121}},
        ArchCase{"cudnn arch 2.5.0", "2.5.0", K::cudnn, nullptr, "cudnn.arch", {70, 75, 100, 120, 121}},
        ArchCase{"cudnn arch 2.6", "2.6", K::cudnn, nullptr, "cudnn.arch", {70, 75, 100, 120, 121}},
        ArchCase{"cudnn arch 2.7", "2.7", K::cudnn, nullptr, "cudnn.arch", {70, 75, 121}},
        ArchCase{"cudnn arch 2.8", "2.8", K::cudnn, nullptr, "cudnn.arch", {70, 75}},
        ArchCase{"cudnn arch 2.15", "2.15", K::cudnn, nullptr, "cudnn.arch", {70, 75}},
        // head_dim 256 only on sm90/sm10x (cuDNN 9.26 in the 2.15 wheel).
        ArchCase{"cudnn D256 2.15", "2.15", K::cudnn, dim<256>, "cudnn.head_dim", {80, 86, 89, 120, 121}, {70, 75},
                 "cudnn.arch"},
        ArchCase{"cudnn D128 2.15", "2.15", K::cudnn, dim<128>, "cudnn.head_dim", {}, {70, 75}, "cudnn.arch"}));

// ---- the priority order and its cuDNN gates (§2) ----

struct OrderCase {
  const char* what;
  const char* torch;
  int sm;
  Tweak tweak;
  std::vector<K> order;
};

const std::vector<K> kFlashFirst{K::flash, K::efficient, K::math};
const std::vector<K> kEfficientFirst{K::efficient, K::flash, K::math};
const std::vector<K> kCudnnFirst{K::cudnn, K::flash, K::efficient, K::math};
const std::vector<K> kCudnnLast{K::flash, K::efficient, K::math, K::cudnn};

template <int B, int H, int L>
void shape(SdpaCall& c, TorchTarget&) {
  c.batch = B;
  c.q_heads = c.kv_heads = H;
  c.seq_q = c.seq_kv = L;
}
template <int B, int H, int L>
void trainShape(SdpaCall& c, TorchTarget& t) {
  shape<B, H, L>(c, t);
  t.requires_grad = true;
}

class CudaOrder : public testing::TestWithParam<OrderCase> {};

std::string orderText(const std::vector<K>& ks) {
  std::string s;
  for (K k : ks) s += (s.empty() ? "" : ", ") + std::string(toString(k));
  return s;
}

TEST_P(CudaOrder, PriorityOrderPerRelease) {
  const OrderCase& c = GetParam();
  SdpaCall call = baseCall();
  TorchTarget t = cudaTarget(c.torch, c.sm);
  if (c.tweak) c.tweak(call, t);
  const PriorityOrder o = sdpaPriorityOrder(call, t);
  EXPECT_EQ(orderText(o.kernels), orderText(c.order)) << c.what << " (" << o.reason << ")";
  // explainSdpa judges the kernels in that same order.
  const auto x = explainSdpa(WorkloadSpec{}, t, call, ExplainOptions{false});
  std::vector<K> judged;
  for (const auto& v : x.verdicts) judged.push_back(v.kernel);
  EXPECT_EQ(orderText(judged), orderText(c.order)) << c.what;
}

INSTANTIATE_TEST_SUITE_P(
    Heuristic, CudaOrder,
    testing::Values(
        // 2.0/2.1 xformers heuristic: efficient first if (B·H < 60 and B·H·⌊Lq/64⌋/2 >= B·H) or D == 128.
        OrderCase{"2.0 B·H 8, Lq 1024", "2.0", 80, shape<1, 8, 1024>, kEfficientFirst},
        OrderCase{"2.0 B·H 64", "2.0", 80, shape<8, 8, 1024>, kFlashFirst},
        OrderCase{"2.0 B·H 59, Lq 128 (59 >= 59)", "2.0", 80, shape<1, 59, 128>, kEfficientFirst},
        OrderCase{"2.0 B·H 59, Lq 64 (29 < 59)", "2.0", 80, shape<1, 59, 64>, kFlashFirst},
        OrderCase{"2.0 B·H 60", "2.0", 80, shape<1, 60, 1024>, kFlashFirst},
        OrderCase{"2.0 B·H 64 D128", "2.0", 80,
                  [](SdpaCall& c, TorchTarget& t) {
                    shape<8, 8, 1024>(c, t);
                    c.head_dim = c.head_dim_v = 128;
                  },
                  kEfficientFirst},
        OrderCase{"2.1 B·H 8 without grad: 2.0's rule", "2.1", 80, shape<1, 8, 1024>, kEfficientFirst},
        // 2.1 training: efficient first iff 6·B·H > Lq.
        OrderCase{"2.1 train 6·8 = 48 vs Lq 48", "2.1", 80, trainShape<1, 8, 48>, kFlashFirst},
        OrderCase{"2.1 train 6·8 = 48 vs Lq 47", "2.1", 80, trainShape<1, 8, 47>, kEfficientFirst},
        OrderCase{"2.1 train Lq 1024 (heuristic would say efficient)", "2.1", 80, trainShape<1, 8, 1024>, kFlashFirst},
        OrderCase{"2.0 train Lq 47 (no training rule yet)", "2.0", 80, trainShape<1, 8, 47>, kFlashFirst},
        // 2.2: fixed flash, efficient, math.
        OrderCase{"2.2 B·H 8 (heuristic gone)", "2.2", 80, shape<1, 8, 1024>, kFlashFirst},
        OrderCase{"2.2 train Lq 47", "2.2", 80, trainShape<1, 8, 47>, kFlashFirst}));

INSTANTIATE_TEST_SUITE_P(
    CudnnGates, CudaOrder,
    testing::Values(
        // 2.3, 2.4: cuDNN listed first (usable only with the env var); 2.2 has no cuDNN at all.
        OrderCase{"2.3 sm90", "2.3", 90, nullptr, kCudnnFirst},
        OrderCase{"2.4 sm80", "2.4", 80, nullptr, kCudnnFirst},
        OrderCase{"2.2 sm90", "2.2", 90, nullptr, kFlashFirst},
        // 2.5.0: cuDNN first on sm >= 90 built with cuDNN >= 9.
        OrderCase{"2.5.0 sm90", "2.5.0", 90, nullptr, kCudnnFirst},
        OrderCase{"2.5.0 sm89", "2.5.0", 89, nullptr, kCudnnLast},
        OrderCase{"2.5.0 sm90 cuDNN 8.9.7", "2.5.0", 90, cudnnAt<8, 9, 7>, kCudnnLast},
        // 2.5.1 - 2.8: cuDNN last (opt-in, PR #138522).
        OrderCase{"2.5.1 sm90", "2.5.1", 90, nullptr, kCudnnLast},
        OrderCase{"2.8 sm90", "2.8", 90, nullptr, kCudnnLast},
        OrderCase{"2.8 sm100", "2.8", 100, nullptr, kCudnnLast},
        // 2.9: first if TORCH_CUDNN_SDPA_PREFERRED not false, cuDNN >= 9.9, sm90 or sm100 (minor 0).
        OrderCase{"2.9 sm90 (PyPI cuDNN 9.10)", "2.9", 90, nullptr, kCudnnFirst},
        OrderCase{"2.9 sm100", "2.9", 100, nullptr, kCudnnFirst},
        OrderCase{"2.9 sm103 (minor 3)", "2.9", 103, nullptr, kCudnnLast},
        OrderCase{"2.9 sm90 cuDNN 9.8.0", "2.9", 90, cudnnAt<9, 8, 0>, kCudnnLast},
        OrderCase{"2.9 sm90 cuDNN 9.9.0", "2.9", 90, cudnnAt<9, 9, 0>, kCudnnFirst},
        OrderCase{"2.9 sm90 PREFERRED=0", "2.9", 90,
                  [](SdpaCall&, TorchTarget& t) { t.env_cudnn_sdpa_preferred = false; }, kCudnnLast},
        // 2.10+: first if not DEPRIORITIZED, runtime cuDNN > 9.15.0, major 9 or 10 (CUDA < 13: minor 0 or 3).
        OrderCase{"2.10 sm90 (PyPI cuDNN 9.10)", "2.10", 90, nullptr, kCudnnLast},
        OrderCase{"2.10 sm90 cuDNN 9.15.0", "2.10", 90, cudnnAt<9, 15, 0>, kCudnnLast},
        OrderCase{"2.10 sm90 cuDNN 9.15.1", "2.10", 90, cudnnAt<9, 15, 1>, kCudnnFirst},
        OrderCase{"2.10 sm103 CUDA 12 cuDNN 9.15.1", "2.10", 103, cudnnAt<9, 15, 1>, kCudnnFirst},
        OrderCase{"2.10 sm101 CUDA 12 cuDNN 9.15.1", "2.10", 101, cudnnAt<9, 15, 1>, kCudnnLast},
        OrderCase{"2.11 sm90 (PyPI cuDNN 9.19)", "2.11", 90, nullptr, kCudnnFirst},
        OrderCase{"2.11 sm101 (CUDA 13: any minor)", "2.11", 101, nullptr, kCudnnFirst},
        OrderCase{"2.15 sm90 DEPRIORITIZED=1", "2.15", 90,
                  [](SdpaCall&, TorchTarget& t) { t.env_cudnn_sdpa_deprioritized = true; }, kCudnnLast}));

struct OrderArchCase {
  const char* what;
  const char* torch;
  std::vector<int> cudnn_first;  // archs where cuDNN leads; everywhere else it is last
};

class CudaOrderArchs : public testing::TestWithParam<OrderArchCase> {};

TEST_P(CudaOrderArchs, CudnnLeadsOnExactlyTheseArchs) {
  const OrderArchCase& c = GetParam();
  for (int sm : kArchs) {
    const PriorityOrder o = sdpaPriorityOrder(baseCall(), cudaTarget(c.torch, sm));
    EXPECT_EQ(orderText(o.kernels), orderText(has(c.cudnn_first, sm) ? kCudnnFirst : kCudnnLast))
        << c.what << " on sm" << sm << " (" << o.reason << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(
    PyPiWheels, CudaOrderArchs,
    testing::Values(OrderArchCase{"2.5.0: sm >= 90", "2.5.0", {90, 100, 120, 121}},
                    OrderArchCase{"2.5.1: opt-in", "2.5.1", {}},
                    OrderArchCase{"2.8: opt-in", "2.8", {}},
                    OrderArchCase{"2.9: sm90, sm100", "2.9", {90, 100}},
                    OrderArchCase{"2.10: PyPI cuDNN 9.10 too old", "2.10", {}},
                    OrderArchCase{"2.11: sm9x, sm10x", "2.11", {90, 100}},
                    OrderArchCase{"2.15: sm9x, sm10x", "2.15", {90, 100}}));


// ---- where the code disagreed with the reference (found with issue 25, fixed in the rules) ----

// §3.2, training row for 2.2+: "rejected if requires_grad on sm86-89 and head_dim ∈ (192,224], or
// >224 with dropout" (upstream check_requires_grad_and_head_dim_gt192_constraints_on_sm86_89:
// cond1 = D in (192, 224], cond2 = D > 224 and dropout). The code used to refuse D > 224 without
// dropout and let D in (192, 224] through.
TEST(CudaReferenceDisagreements, FlashTrainingSm86HeadDimAsTheReferenceStatesIt) {
  for (const char* torch : {"2.2", "2.7", "2.15"}) {
    SdpaCall d200 = baseCall();
    TorchTarget t = cudaTarget(torch, 86);
    train<200>(d200, t);
    EXPECT_EQ(judge(K::flash, d200, t).rule_id, "flash.training_sm86_89") << torch << ": D200, no dropout";
    SdpaCall d256 = baseCall();
    train<256>(d256, t);
    EXPECT_TRUE(judge(K::flash, d256, t).usable) << torch << ": D256, no dropout";
  }
}

// §3.3 dtype row: 2.1 refuses bf16 only on sm5x ("sm5x (2.1) / sm < 80 (2.3+)"); the code used to
// refuse it below sm80 from 2.1.
TEST(CudaReferenceDisagreements, EfficientBf16In2_1RefusedOnlyOnSm5x) {
  for (int sm : {61, 70, 75}) {
    SdpaCall c = baseCall();
    TorchTarget t = cudaTarget("2.1", sm);
    bf16(c, t);
    EXPECT_TRUE(judge(K::efficient, c, t).usable) << "sm" << sm;
  }
}

// §3.3 dropout row: 2.0's efficient kernel refuses dropout ("Mem_efficient does not support
// non_zero dropout"); the code had no such rule.
TEST(CudaReferenceDisagreements, EfficientRefusesDropoutIn2_0) {
  SdpaCall c = baseCall();
  c.dropout_p = 0.1;
  EXPECT_FALSE(judge(K::efficient, c, cudaTarget("2.0", 80)).usable);
}

// 2.0 - 2.2 have no cuDNN backend: their order never lists it, and forcing it (even with 2.3's env
// switch set) leaves no kernel; 2.3 with the switch is the first release it runs.
TEST(CudaRulesForced, CudnnDoesNotExistBefore23) {
  WorkloadSpec spec;
  spec.dtype = DType::fp16;
  for (const char* v : {"2.0", "2.1", "2.2"}) {
    TorchTarget t = cudaTarget(v, 90);
    t.env_cudnn_sdpa_enabled = true;
    const ForcedSdpa f = explainForcedSdpa(spec, t, K::cudnn);
    EXPECT_FALSE(f.verdict.usable) << v;
    EXPECT_EQ(f.verdict.rule_id, "cudnn.exists") << v;
    EXPECT_NE(f.verdict.torch_message.find("no cuDNN attention"), std::string::npos) << v;
    for (const auto& k : explainSdpa(spec, t).verdicts) EXPECT_NE(k.kernel, K::cudnn) << v;
  }
  TorchTarget t23 = cudaTarget("2.3", 90);
  t23.env_cudnn_sdpa_enabled = true;
  EXPECT_TRUE(explainForcedSdpa(spec, t23, K::cudnn).verdict.usable);
}

}  // namespace
