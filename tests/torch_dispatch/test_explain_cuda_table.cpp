// The explainer's CUDA side, pinned rule by rule against shared/reference/torch-sdpa.md (issue 25):
// every CUDA check of flash, efficient and cuDNN at the first release it applies to, the last, and
// the release beyond; every arch-dependent check on sm70 ... sm121; the priority order with its
// cuDNN gates per release; the CUDA memory formulas; and each kind of suggestion. Expected values
// are written from the reference's tables and formulas (section cited per row), never computed by
// the code under test, so a rule cut short by one release or one arch fails a named row.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/torch_dispatch/sdpa_explain.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

namespace {

using K = SdpaKernel;
const auto f16 = DType::fp16, f32 = DType::fp32, b16 = DType::bf16;

// The archs every arch-dependent rule is tried on (sm121: where a range ends there, 2.8+).
const std::vector<int> kArchs{70, 75, 80, 86, 89, 90, 100, 120, 121};

TorchTarget cudaTarget(const char* torch, int sm) {
  return defaultTorchTarget(*parseTorchVersion(torch), TorchDevice::cuda, {sm / 10, sm % 10});
}

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

bool has(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

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

// ---- CUDA memory formulas (§4) ----

WorkloadSpec baseSpec() {
  WorkloadSpec s;
  s.batch = 1;
  s.heads = 8;
  s.seq_q = 256;
  s.head_dim = 64;
  s.dtype = f16;
  return s;
}

using SpecTweak = void (*)(WorkloadSpec&, TorchTarget&);

struct BufferCase {
  const char* what;
  const char* torch;
  int sm;
  K kernel;  // forced (sdpa_kernel([kernel]))
  SpecTweak tweak;
  const char* buffer;  // the start of the buffer's name
  int64_t bytes;       // -1: the plan must not have such a buffer
};

template <int D>
void specDim(WorkloadSpec& s, TorchTarget&) {
  s.head_dim = D;
}
// A bool mask [1,1,Lq,S] on Lq = 64 (S % 8 and S % 16 decide the efficient kernel's padding).
template <int S>
void maskKv(WorkloadSpec& s, TorchTarget&) {
  s.seq_q = 64;
  s.seq_kv = S;
  s.mask = MaskSpec{MaskKind::dense};
}
template <int L>
void specTrain(WorkloadSpec& s, TorchTarget& t) {
  s.seq_q = L;
  t.requires_grad = true;
}
void specMask(WorkloadSpec& s, TorchTarget&) { s.mask = MaskSpec{MaskKind::dense}; }
void specMaskFp32(WorkloadSpec& s, TorchTarget&) {
  s.mask = MaskSpec{MaskKind::dense};
  s.dtype = f32;
}

class CudaMemory : public testing::TestWithParam<BufferCase> {};

TEST_P(CudaMemory, BufferSizesFollowTheReferenceFormulas) {
  const BufferCase& c = GetParam();
  WorkloadSpec s = baseSpec();
  TorchTarget t = cudaTarget(c.torch, c.sm);
  if (c.tweak) c.tweak(s, t);
  ASSERT_TRUE(validate(s).empty()) << c.what << ": " << describe(validate(s));
  const auto f = explainForcedSdpa(s, t, c.kernel);
  ASSERT_TRUE(f.verdict.usable) << c.what << ": " << f.verdict.torch_message;
  int64_t bytes = -1;
  int found = 0;
  for (const auto& b : f.memory.plan.buffers)
    if (b.name.starts_with(c.buffer)) {
      bytes = b.bytes;
      ++found;
    }
  EXPECT_LE(found, 1) << c.what << ": more than one buffer named " << c.buffer;
  EXPECT_EQ(bytes, c.bytes) << c.what << ": " << c.buffer;
}

// B = 1, H = 8, L = S = 256, D = 64, fp16 (e = 2) unless a row says otherwise.
INSTANTIATE_TEST_SUITE_P(
    FlashPadding, CudaMemory,
    testing::Values(
        // §4.3: D % 8 != 0 → q, k, v zero-padded to D8 (2.2+); out [B,L,H,D8] e; softmax_lse [B,H,L] fp32.
        BufferCase{"flash D4: q padded to 8", "2.15", 80, K::flash, specDim<4>, "q padded", 1 * 8 * 256 * 8 * 2},
        BufferCase{"flash D4: k padded", "2.15", 80, K::flash, specDim<4>, "k padded", 1 * 8 * 256 * 8 * 2},
        BufferCase{"flash D4: v padded", "2.15", 80, K::flash, specDim<4>, "v padded", 1 * 8 * 256 * 8 * 2},
        BufferCase{"flash D4: output at D8", "2.15", 80, K::flash, specDim<4>, "output", 1 * 256 * 8 * 8 * 2},
        BufferCase{"flash D4 2.2 (first FA2)", "2.2", 80, K::flash, specDim<4>, "q padded", 1 * 8 * 256 * 8 * 2},
        BufferCase{"flash D12: padded to 16", "2.15", 80, K::flash, specDim<12>, "q padded", 1 * 8 * 256 * 16 * 2},
        BufferCase{"flash D8: not padded", "2.15", 80, K::flash, specDim<8>, "q padded", -1},
        BufferCase{"flash D64 2.1: FA1 never pads", "2.1", 80, K::flash, nullptr, "q padded", -1},
        BufferCase{"flash GQA D4: k padded at Hkv", "2.15", 80, K::flash,
                   [](WorkloadSpec& s, TorchTarget&) {
                     s.head_dim = 4;
                     s.kv_heads = 2;
                   },
                   "k padded", 1 * 2 * 256 * 8 * 2},
        BufferCase{"flash lse L100 not rounded", "2.15", 80, K::flash,
                   [](WorkloadSpec& s, TorchTarget&) { s.seq_q = 100; }, "softmax_lse", 1 * 8 * 100 * 4}));

INSTANTIATE_TEST_SUITE_P(
    EfficientMask, CudaMemory,
    testing::Values(
        // §4.2 2.2+: mask not 8-aligned → one copy padded to a multiple of 8 columns (in q's dtype).
        BufferCase{"efficient S100 2.2: padded to 104", "2.2", 80, K::efficient, maskKv<100>, "padded mask",
                   1 * 1 * 64 * 104 * 2},
        BufferCase{"efficient S100 2.15", "2.15", 80, K::efficient, maskKv<100>, "padded mask", 1 * 1 * 64 * 104 * 2},
        BufferCase{"efficient S104 2.15: aligned", "2.15", 80, K::efficient, maskKv<104>, "padded mask", -1},
        BufferCase{"efficient S104 2.2: 2.1's 16-column rule gone", "2.2", 80, K::efficient, maskKv<104>,
                   "padded mask", -1},
        // §4.2 2.1: the expanded [B,H,L,S] view padded to a multiple of 16 when S % 16 != 0.
        BufferCase{"efficient S104 2.1: expanded, padded to 112", "2.1", 80, K::efficient, maskKv<104>,
                   "padded mask", 1 * 8 * 64 * 112 * 2},
        BufferCase{"efficient S112 2.1: aligned", "2.1", 80, K::efficient, maskKv<112>, "padded mask", -1},
        BufferCase{"efficient S100 per-head mask 2.15", "2.15", 80, K::efficient,
                   [](WorkloadSpec& s, TorchTarget& t) {
                     maskKv<100>(s, t);
                     s.mask_layout = MaskLayout::per_head;
                   },
                   "padded mask", 1 * 8 * 64 * 104 * 2},
        BufferCase{"efficient S100 fp32 2.15", "2.15", 80, K::efficient,
                   [](WorkloadSpec& s, TorchTarget& t) {
                     maskKv<100>(s, t);
                     s.dtype = f32;
                   },
                   "padded mask", 1 * 1 * 64 * 104 * 4},
        // §4.2 kernel: output [B,L,H,Dv] e; logsumexp [B,H,⌈L/32⌉·32] fp32 only when it needs grad.
        BufferCase{"efficient output", "2.15", 80, K::efficient, nullptr, "output", 1 * 256 * 8 * 64 * 2},
        BufferCase{"efficient lse without grad", "2.15", 80, K::efficient, nullptr, "logsumexp", -1},
        BufferCase{"efficient lse L256", "2.15", 80, K::efficient, specTrain<256>, "logsumexp", 1 * 8 * 256 * 4},
        BufferCase{"efficient lse L100 → 128 rows", "2.15", 80, K::efficient, specTrain<100>, "logsumexp",
                   1 * 8 * 128 * 4},
        BufferCase{"efficient lse L33 → 64 rows", "2.15", 80, K::efficient, specTrain<33>, "logsumexp",
                   1 * 8 * 64 * 4},
        BufferCase{"efficient lse L100 2.1", "2.1", 80, K::efficient, specTrain<100>, "logsumexp", 1 * 8 * 128 * 4}));

INSTANTIATE_TEST_SUITE_P(
    MaskConversion, CudaMemory,
    testing::Values(
        // §4.1: A (2.0, 2.1) and B (to 2.5.1) keep numel·e and a transient numel-byte logical_not;
        // C (2.6 measured, 2.7+) numel·e only. Mask [1,1,256,256].
        BufferCase{"2.0 math: variant A logical_not", "2.0", 80, K::math, specMask, "logical_not", 256 * 256},
        BufferCase{"2.0 math: converted fp16", "2.0", 80, K::math, specMask, "converted mask", 256 * 256 * 2},
        BufferCase{"2.1 efficient: variant A logical_not", "2.1", 80, K::efficient, specMask, "logical_not",
                   256 * 256},
        BufferCase{"2.5.0 efficient: variant B logical_not", "2.5.0", 80, K::efficient, specMask, "logical_not",
                   256 * 256},
        BufferCase{"2.5.1 efficient: variant B (last)", "2.5.1", 80, K::efficient, specMask, "logical_not", 256 * 256},
        BufferCase{"2.6 efficient: variant C (first)", "2.6", 80, K::efficient, specMask, "logical_not", -1},
        BufferCase{"2.15 efficient: variant C", "2.15", 80, K::efficient, specMask, "logical_not", -1},
        BufferCase{"2.15 efficient: converted fp16", "2.15", 80, K::efficient, specMask, "converted mask",
                   256 * 256 * 2},
        BufferCase{"2.15 efficient: converted fp32", "2.15", 80, K::efficient, specMaskFp32, "converted mask",
                   256 * 256 * 4},
        BufferCase{"2.5.1 cudnn: variant B logical_not", "2.5.1", 90, K::cudnn, specMask, "logical_not", 256 * 256},
        BufferCase{"2.15 cudnn: variant C", "2.15", 90, K::cudnn, specMask, "logical_not", -1},
        BufferCase{"2.15 cudnn: converted fp16", "2.15", 90, K::cudnn, specMask, "converted mask", 256 * 256 * 2}));

INSTANTIATE_TEST_SUITE_P(
    MathAndCudnn, CudaMemory,
    testing::Values(
        // §4.5: fp16/bf16 copied to fp32 from 2.5 unless allow_fp16_bf16_reduction_math_sdp(True).
        BufferCase{"2.4 math fp16: no fp32 copy", "2.4", 80, K::math, nullptr, "q fp32 copy", -1},
        BufferCase{"2.5.0 math fp16: q fp32 copy (first)", "2.5.0", 80, K::math, nullptr, "q fp32 copy",
                   1 * 8 * 256 * 64 * 4},
        BufferCase{"2.5.0 math fp16: k fp32 copy", "2.5.0", 80, K::math, nullptr, "k fp32 copy", 1 * 8 * 256 * 64 * 4},
        BufferCase{"2.5.0 math fp16: v fp32 copy", "2.5.0", 80, K::math, nullptr, "v fp32 copy", 1 * 8 * 256 * 64 * 4},
        BufferCase{"2.15 math bf16: q fp32 copy", "2.15", 80, K::math,
                   [](WorkloadSpec& s, TorchTarget&) { s.dtype = b16; }, "q fp32 copy", 1 * 8 * 256 * 64 * 4},
        BufferCase{"2.15 math fp16 GQA: k fp32 copy at Hkv", "2.15", 80, K::math,
                   [](WorkloadSpec& s, TorchTarget&) { s.kv_heads = 2; }, "k fp32 copy", 1 * 2 * 256 * 64 * 4},
        BufferCase{"2.15 math fp16 with the flag: none", "2.15", 80, K::math,
                   [](WorkloadSpec&, TorchTarget& t) { t.allow_fp16_bf16_reduction_math = true; }, "q fp32 copy", -1},
        BufferCase{"2.15 math fp32: none", "2.15", 80, K::math, [](WorkloadSpec& s, TorchTarget&) { s.dtype = f32; },
                   "q fp32 copy", -1},
        // §4.5 scores: e·N before 2.5, fp32 from 2.5; 2.5's third N·4 buffer (where()) gone from 2.6.
        BufferCase{"2.4 math fp16 scores", "2.4", 80, K::math, nullptr, "scores fp16", 8 * 256 * 256 * 2},
        BufferCase{"2.5.0 math fp16 scores fp32", "2.5.0", 80, K::math, nullptr, "scores fp32", 8 * 256 * 256 * 4},
        BufferCase{"2.4 math: plain softmax", "2.4", 80, K::math, nullptr, "_safe_softmax where()", -1},
        BufferCase{"2.5.1 math: where() N·4", "2.5.1", 80, K::math, nullptr, "_safe_softmax where()",
                   8 * 256 * 256 * 4},
        BufferCase{"2.6 math: where_out, no third buffer", "2.6", 80, K::math, nullptr, "_safe_softmax where()", -1},
        // §4.4 cuDNN: output [B,H,L,Dv] e; stats [B,H,L,1] fp32 only when logsumexp is needed.
        BufferCase{"cudnn output", "2.15", 90, K::cudnn, nullptr, "output", 1 * 8 * 256 * 64 * 2},
        BufferCase{"cudnn stats without grad", "2.15", 90, K::cudnn, nullptr, "stats", -1},
        BufferCase{"cudnn stats L100", "2.15", 90, K::cudnn, specTrain<100>, "stats", 1 * 8 * 100 * 4}));

// §4.5: CUBLAS_WORKSPACE_CONFIG default :4096:2:16:8 = 8,519,680 B; 32 MiB on sm90 (newer
// CublasHandlePool.cpp: major 9, 10 or 12). The math path's first GEMM allocates it.
TEST(CudaMemoryArchs, CublasWorkspacePerArch) {
  const std::vector<int> big{90, 100, 120, 121};
  for (int sm : kArchs) {
    const auto f = explainForcedSdpa(baseSpec(), cudaTarget("2.15", sm), K::math);
    int64_t bytes = -1;
    for (const auto& b : f.memory.plan.buffers)
      if (b.name == "cuBLAS workspace") bytes = b.bytes;
    EXPECT_EQ(bytes, has(big, sm) ? 33554432 : 8519680) << "sm" << sm;
  }
  // sm90 has 32 MiB in the older rule too, in every release.
  for (const char* torch : {"2.0", "2.5.1", "2.10"}) {
    const auto f = explainForcedSdpa(baseSpec(), cudaTarget(torch, 90), K::math);
    int64_t bytes = -1;
    for (const auto& b : f.memory.plan.buffers)
      if (b.name == "cuBLAS workspace") bytes = b.bytes;
    EXPECT_EQ(bytes, 33554432) << torch;
  }
}

// §4.1's variant letters by release: A in 2.0 and 2.1, B in 2.5.x, C from 2.6 (the 2.2-2.4 letter
// is not pinned by the reference; A and B cost the same).
TEST(CudaMemoryArchs, MaskConversionVariantPerRelease) {
  struct Row {
    const char* torch;
    K kernel;
    const char* variant;
  };
  for (const Row& r : {Row{"2.0", K::math, "(variant A)"}, Row{"2.1", K::efficient, "(variant A)"},
                       Row{"2.5.0", K::efficient, "(variant B)"}, Row{"2.5.1", K::efficient, "(variant B)"},
                       Row{"2.6", K::efficient, "(variant C)"}, Row{"2.7", K::efficient, "(variant C)"},
                       Row{"2.15", K::efficient, "(variant C)"}}) {
    WorkloadSpec s = baseSpec();
    s.mask = MaskSpec{MaskKind::dense};
    const auto f = explainForcedSdpa(s, cudaTarget(r.torch, 80), r.kernel);
    bool found = false;
    for (const auto& step : f.memory.plan.steps)
      if (step.starts_with("convert bool mask")) {
        found = true;
        EXPECT_NE(step.find(r.variant), std::string::npos) << r.torch << ": " << step;
      }
    EXPECT_TRUE(found) << r.torch;
  }
}

// ---- suggestions (addSuggestions) ----

const SdpaSuggestion* suggestion(const SdpaExplanation& x, const std::string& change_prefix) {
  for (const auto& g : x.suggestions)
    if (g.change.starts_with(change_prefix)) return &g;
  return nullptr;
}

struct SuggestionCase {
  const char* what;
  const char* torch;
  int sm;
  SpecTweak tweak;
  const char* change;  // the start of the suggestion's text
  bool offered;
  K kernel = K::math;      // where offered: the kernel it moves to
  int64_t peak_bytes = 0;  // where offered and not 0: its peak, from §4's formulas
};

class CudaSuggestions : public testing::TestWithParam<SuggestionCase> {};

TEST_P(CudaSuggestions, OfferedWhereTheyHelp) {
  const SuggestionCase& c = GetParam();
  WorkloadSpec s = baseSpec();
  TorchTarget t = cudaTarget(c.torch, c.sm);
  if (c.tweak) c.tweak(s, t);
  ASSERT_TRUE(validate(s).empty()) << c.what << ": " << describe(validate(s));
  const auto x = explainSdpa(s, t);
  std::string all;
  for (const auto& g : x.suggestions) all += "\n  " + g.change + " (" + std::string(toString(g.kernel)) + ")";
  const SdpaSuggestion* g = suggestion(x, c.change);
  if (!c.offered) {
    EXPECT_EQ(g, nullptr) << c.what << ": offered " << c.change;
    return;
  }
  ASSERT_NE(g, nullptr) << c.what << ": no \"" << c.change << "\" among:" << all;
  EXPECT_EQ(toString(g->kernel), toString(c.kernel)) << c.what;
  EXPECT_LT(g->peak_bytes, x.peakBytes()) << c.what;
  if (c.peak_bytes) {
    EXPECT_EQ(g->peak_bytes, c.peak_bytes) << c.what;
  }
}

// Peaks for 2.15 on sm80, B1 L=S=256, nothing freed before the kernel returns (§4.1-§4.3):
// efficient = q,k,v + bool mask + converted mask (e, variant C) + output; flash = q,k,v + output + lse.
constexpr int64_t kMask = 256 * 256;

INSTANTIATE_TEST_SUITE_P(
    Kinds, CudaSuggestions,
    testing::Values(
        // pad head_dim to 8: fp16 D4 with a mask is refused by efficient (alignment 8) → math.
        SuggestionCase{"pad 4 -> 8 (fp16)", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 4;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "pad head_dim 4 -> 8", true, K::efficient,
                       3 * 8 * 256 * 8 * 2 + kMask + kMask * 2 + 8 * 256 * 8 * 2},
        // pad head_dim to 4: fp32 on sm80 needs D % 4; D2 → 4 is cheaper than → 8.
        SuggestionCase{"pad 2 -> 4 (fp32 sm80)", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 2;
                         s.dtype = f32;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "pad head_dim 2 -> 4", true, K::efficient,
                       3 * 8 * 256 * 4 * 4 + kMask + kMask * 4 + 8 * 256 * 4 * 4},
        SuggestionCase{"pad 2 -> 8 (fp32 sm80)", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 2;
                         s.dtype = f32;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "pad head_dim 2 -> 8", true, K::efficient,
                       3 * 8 * 256 * 8 * 4 + kMask + kMask * 4 + 8 * 256 * 8 * 4},
        SuggestionCase{"pad 3 -> 4 (fp32 sm80)", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 3;
                         s.dtype = f32;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "pad head_dim 3 -> 4", true, K::efficient},
        // fewer heads at a fixed width: width 64 over 16 heads is D4; 8 heads give D8 (efficient).
        SuggestionCase{"heads 16 -> 8 at width 64", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.width = 64;
                         s.heads = 16;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "heads 16 -> 8", true, K::efficient, 3 * 8 * 256 * 8 * 2 + kMask + kMask * 2 + 8 * 256 * 8 * 2},
        // is_causal instead of a bool mask: flash takes it.
        SuggestionCase{"is_causal instead of the mask", "2.15", 80, specMask, "is_causal=True instead", true, K::flash,
                       3 * 8 * 256 * 64 * 2 + 8 * 256 * 64 * 2 + 8 * 256 * 4},
        SuggestionCase{"no mask: no is_causal suggestion", "2.15", 80, nullptr, "is_causal=True instead", false},
        // broadcast a per-head mask.
        SuggestionCase{"per-head mask → broadcast", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.mask = MaskSpec{MaskKind::dense};
                         s.mask_layout = MaskLayout::per_head;
                       },
                       "mask [1,1,L,S] broadcast", true, K::efficient,
                       3 * 8 * 256 * 64 * 2 + kMask + kMask * 2 + 8 * 256 * 64 * 2},
        SuggestionCase{"broadcast mask: nothing to broadcast", "2.15", 80, specMask, "mask [1,1,L,S] broadcast", false},
        // another dtype: fp32 goes to efficient; fp16/bf16 to flash at half the bytes.
        SuggestionCase{"fp32 → fp16", "2.15", 80, [](WorkloadSpec& s, TorchTarget&) { s.dtype = f32; }, "dtype fp16",
                       true, K::flash, 3 * 8 * 256 * 64 * 2 + 8 * 256 * 64 * 2 + 8 * 256 * 4},
        SuggestionCase{"fp32 → bf16", "2.15", 80, [](WorkloadSpec& s, TorchTarget&) { s.dtype = f32; }, "dtype bf16",
                       true, K::flash, 3 * 8 * 256 * 64 * 2 + 8 * 256 * 64 * 2 + 8 * 256 * 4},
        // the reduced-precision math flag: math in fp16 from 2.5 (no fp32 copies); not before.
        SuggestionCase{"math fp16 2.15: the flag", "2.15", 70,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 4;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)", true, K::math},
        SuggestionCase{"math fp16 2.5.0: the flag (first)", "2.5.0", 70,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 4;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)", true, K::math},
        SuggestionCase{"math fp16 2.4: no flag yet", "2.4", 70,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 4;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)", false},
        SuggestionCase{"math fp32: no flag", "2.15", 80,
                       [](WorkloadSpec& s, TorchTarget&) {
                         s.head_dim = 2;
                         s.dtype = f32;
                         s.mask = MaskSpec{MaskKind::dense};
                       },
                       "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)", false},
        // another release: 2.1's FA1 refuses D4 (and efficient's alignment too) → math; every FA2
        // release pads it for flash at the same cost, and the newest of the cheapest is named.
        SuggestionCase{"2.1 D4 → torch 2.15.0", "2.1", 80, specDim<4>, "torch 2.15.0 (PyPI build)", true, K::flash,
                       3 * 8 * 256 * 4 * 2 + 3 * 8 * 256 * 8 * 2 + 8 * 256 * 8 * 2 + 8 * 256 * 4}));

TEST(CudaSuggestionsOnce, OneFewerHeadsSuggestionAndOnePerPadding) {
  // Only the largest head count that helps is kept; D6 rounds to 8 for both alignments (one pad).
  WorkloadSpec s = baseSpec();
  s.width = 64;
  s.heads = 16;
  s.mask = MaskSpec{MaskKind::dense};
  const auto x = explainSdpa(s, cudaTarget("2.15", 80));
  int heads = 0;
  for (const auto& g : x.suggestions) heads += g.change.starts_with("heads ");
  EXPECT_EQ(heads, 1);
  WorkloadSpec d6 = baseSpec();
  d6.head_dim = 6;
  d6.dtype = f32;
  d6.mask = MaskSpec{MaskKind::dense};
  const auto y = explainSdpa(d6, cudaTarget("2.15", 80));
  int pads = 0;
  for (const auto& g : y.suggestions) pads += g.change.starts_with("pad head_dim 6 -> ");
  EXPECT_EQ(pads, 1);
  EXPECT_NE(suggestion(y, "pad head_dim 6 -> 8"), nullptr);
}

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
