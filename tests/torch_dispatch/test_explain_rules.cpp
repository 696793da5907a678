// Table-driven tests of the dispatch rules against shared/reference/torch-sdpa.md §2-§3: alignment
// per dtype and arch, masks per backend and version, head_dim limits, GQA, the priority order with
// cuDNN's version gates, the causal non-square rule, and how a spec becomes an SDPA call.
#include <map>

#include <gtest/gtest.h>

#include "core/torch_dispatch/sdpa_explain.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

namespace {

using K = SdpaKernel;

struct Case {
  const char* name;
  const char* torch;
  const char* gpu;  // "cpu" or a GPU
  DType dtype;
  int64_t heads, kv_heads, seq, seq_kv, head_dim;
  const char* mask;
  K expected;
  // Optional: a kernel and the id of the rule that must reject it first.
  std::optional<K> rejected = std::nullopt;
  const char* rule_id = "";
};

TorchTarget target(const char* torch, const char* gpu) {
  const TorchVersion v = *parseTorchVersion(torch);
  if (std::string(gpu) == "cpu") return defaultTorchTarget(v, TorchDevice::cpu);
  return defaultTorchTarget(v, TorchDevice::cuda, parseGpu(gpu)->capability);
}

WorkloadSpec spec(const Case& c) {
  WorkloadSpec s;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.seq_q = c.seq;
  s.seq_kv = c.seq_kv;
  s.head_dim = c.head_dim;
  s.dtype = c.dtype;
  s.mask = *parseMask(c.mask).mask;
  EXPECT_TRUE(validate(s).empty()) << c.name;
  return s;
}

const KernelVerdict* verdict(const SdpaExplanation& x, K k) {
  for (const auto& v : x.verdicts)
    if (v.kernel == k && v.via.find("bias") == std::string::npos) return &v;
  return nullptr;
}

class DispatchTable : public testing::TestWithParam<Case> {};

TEST_P(DispatchTable, ChoosesAndRejectsAsTheReferenceSays) {
  const Case& c = GetParam();
  const auto x = explainSdpa(spec(c), target(c.torch, c.gpu), ExplainOptions{false});
  ASSERT_TRUE(x.chosen.has_value()) << c.name << ": " << x.error;
  EXPECT_EQ(toString(*x.chosen), toString(c.expected)) << c.name << ": " << x.headline();
  if (c.rejected) {
    const KernelVerdict* v = verdict(x, *c.rejected);
    ASSERT_NE(v, nullptr) << c.name;
    EXPECT_FALSE(v->usable) << c.name;
    EXPECT_EQ(v->rule_id, c.rule_id) << c.name << ": " << v->torch_message;
  }
}

const auto f16 = DType::fp16, f32 = DType::fp32, b16 = DType::bf16;

INSTANTIATE_TEST_SUITE_P(
    Alignment, DispatchTable,
    testing::Values(
        // minimum_gemm_alignment: sm70 fp16 needs D % 8, fp32 any; sm80 fp32 needs D % 4; sm5x/6x any.
        Case{"sm70 fp16 D4 mask", "2.10", "V100", f16, 16, 0, 512, 0, 4, "dense", K::math, K::efficient, "efficient.head_dim_alignment"},
        Case{"sm70 fp16 D8 mask", "2.10", "V100", f16, 8, 0, 512, 0, 8, "dense", K::efficient},
        Case{"sm70 fp32 D4 mask", "2.10", "sm70", f32, 16, 0, 512, 0, 4, "dense", K::efficient},
        Case{"sm80 fp16 D4 mask", "2.15", "A100", f16, 16, 0, 512, 0, 4, "dense", K::math, K::efficient, "efficient.head_dim_alignment"},
        Case{"sm80 fp32 D4 mask", "2.15", "A100", f32, 16, 0, 512, 0, 4, "dense", K::efficient},
        Case{"sm80 fp32 D6 mask", "2.15", "A100", f32, 16, 0, 512, 0, 6, "dense", K::math, K::efficient, "efficient.head_dim_alignment"},
        Case{"sm61 fp16 D4 mask", "2.15", "sm61", f16, 16, 0, 512, 0, 4, "dense", K::efficient},
        Case{"sm75 fp16 D12 mask", "2.7", "T4", f16, 4, 0, 512, 0, 12, "dense", K::math, K::efficient, "efficient.head_dim_alignment"}));

INSTANTIATE_TEST_SUITE_P(
    Masks, DispatchTable,
    testing::Values(
        Case{"2.0 mask: no fused kernel", "2.0", "A100", f16, 8, 0, 512, 0, 64, "dense", K::math, K::efficient, "efficient.attn_mask"},
        Case{"2.0 mask flash", "2.0", "A100", f16, 8, 0, 512, 0, 64, "dense", K::math, K::flash, "flash.attn_mask"},
        Case{"2.1 mask: efficient", "2.1", "A100", f16, 8, 0, 512, 0, 64, "dense", K::efficient, K::flash, "flash.attn_mask"},
        Case{"2.15 window mask: efficient", "2.15", "A100", f16, 8, 0, 512, 0, 64, "window:64", K::efficient, K::flash, "flash.attn_mask"},
        Case{"2.15 no mask: flash", "2.15", "A100", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.15 causal: flash", "2.15", "A100", b16, 8, 0, 512, 0, 64, "causal", K::flash},
        Case{"cpu 2.0: math only", "2.0", "cpu", f32, 8, 0, 512, 0, 64, "none", K::math},
        Case{"cpu 2.1 mask: math", "2.1", "cpu", f32, 8, 0, 512, 0, 64, "dense", K::math, K::flash, "cpu_flash.attn_mask"},
        Case{"cpu 2.1 no mask: flash", "2.1", "cpu", f32, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"cpu 2.1 fp16: math", "2.1", "cpu", f16, 8, 0, 512, 0, 64, "none", K::math, K::flash, "cpu_flash.dtype"},
        // Measured with each wheel (scripts/measure_torch_release.sh): 2.2 is like 2.1; masks and
        // fp16 go to flash from 2.3; enable_gqa from 2.9.
        Case{"cpu 2.2 mask: math", "2.2", "cpu", f32, 8, 0, 512, 0, 64, "dense", K::math, K::flash, "cpu_flash.attn_mask"},
        Case{"cpu 2.2 fp16: math", "2.2", "cpu", f16, 8, 0, 512, 0, 64, "none", K::math, K::flash, "cpu_flash.dtype"},
        Case{"cpu 2.3 mask: flash", "2.3", "cpu", f32, 8, 0, 512, 0, 64, "dense", K::flash},
        Case{"cpu 2.3 fp16: flash", "2.3", "cpu", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"cpu 2.8 GQA: math", "2.8", "cpu", f32, 8, 2, 512, 0, 64, "none", K::math, K::flash, "cpu_flash.heads"},
        Case{"cpu 2.9 GQA: flash", "2.9", "cpu", f32, 8, 2, 512, 0, 64, "none", K::flash},
        Case{"cpu 2.4 fp16 mask: flash", "2.4", "cpu", f16, 8, 0, 512, 0, 64, "dense", K::flash},
        Case{"cpu 2.5.1 mask: flash", "2.5.1", "cpu", f32, 8, 0, 512, 0, 64, "dense", K::flash},
        Case{"cpu 2.15 fp16 block mask: flash", "2.15", "cpu", f16, 8, 0, 512, 0, 64, "block:64", K::flash}));

INSTANTIATE_TEST_SUITE_P(
    HeadDimAndArch, DispatchTable,
    testing::Values(
        // FA1 (2.0, 2.1) needs D % 8 and D <= 128; FA2 (2.2+) pads any D <= 256.
        Case{"2.1 flash D4", "2.1", "A100", f16, 8, 0, 512, 0, 4, "none", K::math, K::flash, "flash.head_dim"},
        Case{"2.1 flash D136", "2.1", "A100", f16, 8, 0, 512, 0, 136, "none", K::efficient, K::flash, "flash.head_dim"},
        Case{"2.2 flash D4 padded", "2.2", "A100", f16, 8, 0, 512, 0, 4, "none", K::flash},
        Case{"2.2 flash D136", "2.2", "A100", f16, 8, 0, 512, 0, 136, "none", K::flash},
        Case{"2.1 flash sm75 (B·H >= 60: flash first)", "2.1", "T4", f16, 64, 0, 512, 0, 64, "none", K::flash},
        Case{"2.2 flash sm75 rejected", "2.2", "T4", f16, 8, 0, 512, 0, 64, "none", K::efficient, K::flash, "flash.arch"},
        Case{"2.0 flash sm90 rejected", "2.0", "H100", f16, 64, 0, 512, 0, 64, "none", K::efficient, K::flash, "flash.arch"},
        Case{"2.6 flash sm120 rejected", "2.6", "RTX 5090", f16, 8, 0, 512, 0, 64, "none", K::math, K::flash, "flash.arch"},
        Case{"2.7 flash sm120", "2.7", "RTX 5090", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.7 flash sm121 rejected", "2.7", "sm121", f16, 8, 0, 512, 0, 64, "none", K::math, K::flash, "flash.arch"},
        Case{"2.8 flash sm121", "2.8", "sm121", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.6 efficient sm100 rejected", "2.6", "B200", f16, 8, 0, 512, 0, 64, "dense", K::math, K::efficient, "efficient.arch"},
        Case{"sm75 bf16: no fused kernel", "2.15", "T4", b16, 8, 0, 512, 0, 64, "none", K::math, K::efficient, "efficient.dtype"},
        Case{"fp32 never flash", "2.15", "A100", f32, 8, 0, 512, 0, 64, "none", K::efficient, K::flash, "flash.dtype"},
        // cuDNN: D % 8 and <= 128 (256 on sm90/sm10x with cuDNN > 9.22 in 2.15).
        Case{"cudnn D4 on H100", "2.15", "H100", f16, 8, 0, 512, 0, 4, "none", K::flash, K::cudnn, "cudnn.head_dim"},
        Case{"cudnn D192 on H100 2.15", "2.15", "H100", f16, 8, 0, 512, 0, 192, "none", K::cudnn},
        Case{"cudnn D192 on H100 2.12", "2.12", "H100", f16, 8, 0, 512, 0, 192, "none", K::flash, K::cudnn, "cudnn.head_dim"},
        Case{"cudnn fp32 on H100", "2.15", "H100", f32, 8, 0, 512, 0, 64, "none", K::efficient, K::cudnn, "cudnn.dtype"}));

INSTANTIATE_TEST_SUITE_P(
    Gqa, DispatchTable,
    testing::Values(
        Case{"2.5.1 GQA no mask: flash", "2.5.1", "A100", f16, 8, 2, 512, 0, 64, "none", K::flash},
        Case{"2.5.1 GQA mask: efficient refuses", "2.5.1", "A100", f16, 8, 2, 512, 0, 64, "dense", K::math, K::efficient, "efficient.heads"},
        Case{"2.15 GQA mask: efficient", "2.15", "A100", f16, 8, 2, 512, 0, 64, "dense", K::efficient},
        Case{"2.4 GQA: K/V repeated, efficient", "2.4", "A100", f16, 8, 2, 512, 0, 64, "dense", K::efficient},
        Case{"cpu 2.7 GQA: math", "2.7", "cpu", f32, 8, 2, 512, 0, 64, "none", K::math, K::flash, "cpu_flash.heads"},
        Case{"cpu 2.10 GQA: flash", "2.10", "cpu", f32, 8, 2, 512, 0, 64, "none", K::flash}));

INSTANTIATE_TEST_SUITE_P(
    CudnnPriority, DispatchTable,
    testing::Values(
        Case{"2.3 sm90 cuDNN env-gated", "2.3", "H100", f16, 8, 0, 512, 0, 64, "none", K::flash, K::cudnn, "cudnn.env_gate"},
        Case{"2.5.0 sm90 cuDNN first", "2.5.0", "H100", f16, 8, 0, 512, 0, 64, "none", K::cudnn},
        Case{"2.5.0 sm80 cuDNN last", "2.5.0", "A100", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.5.1 sm90 opt-in: flash", "2.5.1", "H100", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.9 sm90 cuDNN 9.10 first", "2.9", "H100", f16, 8, 0, 512, 0, 64, "none", K::cudnn},
        Case{"2.9 sm89 cuDNN last", "2.9", "L4", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.10 sm90 PyPI cuDNN 9.10: last", "2.10", "H100", f16, 8, 0, 512, 0, 64, "none", K::flash},
        Case{"2.11 sm90 cuDNN 9.19: first", "2.11", "H200", f16, 8, 0, 512, 0, 64, "none", K::cudnn},
        Case{"2.15 B200 cuDNN first", "2.15", "B200", b16, 8, 0, 512, 0, 128, "none", K::cudnn},
        Case{"2.15 H100 mask: cuDNN takes masks", "2.15", "H100", f16, 8, 0, 512, 0, 64, "dense", K::cudnn},
        Case{"2.15 RTX 4090 cuDNN last", "2.15", "RTX 4090", f16, 8, 0, 512, 0, 64, "none", K::flash}));

TEST(Priority, CudnnGatesFromEnvironmentAndRuntimeVersion) {
  SdpaCall call;
  call.dtype = DType::fp16;
  auto order = [&](TorchTarget t) { return sdpaPriorityOrder(call, t).kernels.front(); };
  auto h100 = [](const char* v) { return defaultTorchTarget(*parseTorchVersion(v), TorchDevice::cuda, {9, 0}); };
  auto t = h100("2.9");
  t.env_cudnn_sdpa_preferred = false;
  EXPECT_EQ(order(t), K::flash);  // TORCH_CUDNN_SDPA_PREFERRED=0
  t = h100("2.10");
  EXPECT_EQ(order(t), K::flash);  // PyPI cuDNN 9.10.2 <= 9.15.0
  t.cudnn = {9, 15, 0};
  EXPECT_EQ(order(t), K::flash);  // must be > 9.15.0
  t.cudnn = {9, 15, 1};
  EXPECT_EQ(order(t), K::cudnn);
  t.env_cudnn_sdpa_deprioritized = true;
  EXPECT_EQ(order(t), K::flash);
  // CUDA < 13 builds: GPU minor must be 0 or 3.
  auto t12 = defaultTorchTarget(*parseTorchVersion("2.12"), TorchDevice::cuda, {10, 1});
  EXPECT_EQ(order(t12), K::cudnn);  // CUDA 13 wheel
  t12.cuda_major = 12;
  EXPECT_EQ(order(t12), K::flash);
  t12.capability = {10, 3};
  EXPECT_EQ(order(t12), K::cudnn);
  // 2.2 fixed order; 2.3/2.4 list cuDNN first; 2.6+ cuDNN last on sm80.
  EXPECT_EQ(sdpaPriorityOrder(call, h100("2.2")).kernels, (std::vector<K>{K::flash, K::efficient, K::math}));
  EXPECT_EQ(sdpaPriorityOrder(call, h100("2.4")).kernels, (std::vector<K>{K::cudnn, K::flash, K::efficient, K::math}));
  EXPECT_EQ(sdpaPriorityOrder(call, h100("2.6")).kernels, (std::vector<K>{K::flash, K::efficient, K::math, K::cudnn}));
  auto env23 = h100("2.3");
  env23.env_cudnn_sdpa_enabled = true;
  WorkloadSpec s;
  s.dtype = DType::fp16;
  EXPECT_EQ(explainSdpa(s, env23, ExplainOptions{false}).chosen, K::cudnn);  // TORCH_CUDNN_SDPA_ENABLED=1
  auto env24 = h100("2.4");
  env24.env_cudnn_sdpa_enabled = true;
  s.head_dim = 4;  // 2.4 already checks cuDNN's head_dim (its binary has the message)
  const auto x24 = explainSdpa(s, env24, ExplainOptions{false});
  EXPECT_EQ(x24.chosen, K::flash);
  EXPECT_EQ(x24.verdicts.front().rule_id, "cudnn.head_dim");
}

TEST(Priority, XformersHeuristicIn20And21) {
  SdpaCall call;
  call.dtype = DType::fp16;
  call.batch = 1;
  call.q_heads = 8;
  call.seq_q = 1024;
  auto t = defaultTorchTarget(*parseTorchVersion("2.0"), TorchDevice::cuda, {8, 0});
  // B·H = 8 < 60 and 8·16/2 >= 8: efficient first.
  EXPECT_EQ(sdpaPriorityOrder(call, t).kernels.front(), K::efficient);
  call.batch = 8;  // B·H = 64
  EXPECT_EQ(sdpaPriorityOrder(call, t).kernels.front(), K::flash);
  call.head_dim = 128;
  EXPECT_EQ(sdpaPriorityOrder(call, t).kernels.front(), K::efficient);
  // 2.1 training: efficient first iff 6·B·H > Lq.
  t.version = {2, 1, 0};
  t.requires_grad = true;
  call.head_dim = 64;
  call.batch = 1;
  EXPECT_EQ(sdpaPriorityOrder(call, t).kernels.front(), K::flash);  // 48 <= 1024
  call.seq_q = 40;
  EXPECT_EQ(sdpaPriorityOrder(call, t).kernels.front(), K::efficient);
}

TEST(Rules, EfficientAlignmentTable) {
  struct Row { ComputeCapability cc; int64_t half, fp32; };
  for (const Row& r : {Row{{5, 0}, 1, 1}, Row{{6, 1}, 1, 1}, Row{{7, 0}, 8, 1}, Row{{7, 5}, 8, 1}, Row{{8, 0}, 8, 4},
                       Row{{8, 9}, 8, 4}, Row{{9, 0}, 8, 4}, Row{{12, 0}, 8, 4}}) {
    EXPECT_EQ(efficientAlignment(DType::fp16, r.cc), r.half) << r.cc.text();
    EXPECT_EQ(efficientAlignment(DType::bf16, r.cc), r.half) << r.cc.text();
    EXPECT_EQ(efficientAlignment(DType::fp32, r.cc), r.fp32) << r.cc.text();
  }
}

TEST(Rules, CpuFlashAbsentIn20) {
  // 2.0's CPU has no flash: SDPA's own choice is math, and a forced
  // flash runs math too (sdp_kernel is not read on the CPU; measured on 2.0.1).
  const auto x = explainSdpa(WorkloadSpec{}, defaultTorchTarget({2, 0, 0}, TorchDevice::cpu), ExplainOptions{false});
  ASSERT_TRUE(x.chosen);
  EXPECT_EQ(*x.chosen, K::math);
  auto f = explainForcedSdpa(WorkloadSpec{}, defaultTorchTarget({2, 0, 0}, TorchDevice::cpu), K::flash);
  EXPECT_TRUE(f.verdict.usable);
  EXPECT_EQ(f.verdict.kernel, K::math);
  auto e = explainForcedSdpa(WorkloadSpec{}, defaultTorchTarget({2, 15, 0}, TorchDevice::cpu), K::efficient);
  EXPECT_FALSE(e.verdict.usable);  // CPU has no efficient kernel
}

TEST(Rules, CausalNonSquare) {
  SdpaCall call;
  call.dtype = DType::fp16;
  call.seq_q = 128;
  call.seq_kv = 512;
  call.mask = SdpaMaskPassing::is_causal;
  auto t22 = defaultTorchTarget({2, 2, 0}, TorchDevice::cuda, {8, 0});
  auto f = firstFailingRule(K::flash, call, t22);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule->id, "flash.causal_non_square");
  EXPECT_EQ(f->message, "Flash attention does not support the is_causal flag when seqlen_q != seqlen_k. Got seqlen_q: 128 seqlen_k: 512 instead.");
  EXPECT_FALSE(firstFailingRule(K::flash, call, defaultTorchTarget({2, 1, 0}, TorchDevice::cuda, {8, 0})));
  call.seq_kv = 128;
  EXPECT_FALSE(firstFailingRule(K::flash, call, t22));
}

TEST(Rules, MessagesQuoteTorch) {
  WorkloadSpec s;
  s.width = 64;
  s.heads = 16;
  s.seq_q = 10000;
  s.dtype = DType::fp16;
  s.mask = MaskSpec{MaskKind::dense};
  const auto x = explainSdpa(s, defaultTorchTarget({2, 15, 0}, TorchDevice::cuda, {8, 0}), ExplainOptions{false});
  EXPECT_EQ(verdict(x, K::flash)->torch_message, "Flash Attention does not support non-null attn_mask.");
  EXPECT_EQ(verdict(x, K::efficient)->torch_message,
            "Mem efficient attention requires last dimension of inputs to be divisible by 8. Got Query.size(-1): 4, "
            "Key.size(-1): 4, Value.size(-1): 4 instead.");
  const auto x3 = explainSdpa(s, defaultTorchTarget({2, 3, 0}, TorchDevice::cuda, {7, 0}), ExplainOptions{false});
  EXPECT_EQ(verdict(x3, K::flash)->torch_message, "Both fused kernels do not support non-null attn_mask.");
}

TEST(SdpaCallMapping, MaskAndGqaPassing) {
  WorkloadSpec s;
  s.seq_q = 128;
  s.seq_kv = 512;
  s.mask = MaskSpec{MaskKind::causal};
  EXPECT_EQ(sdpaCallFor(s, {2, 15, 0}).mask, SdpaMaskPassing::causal_lower_right);
  auto old = sdpaCallFor(s, {2, 2, 0});
  EXPECT_EQ(old.mask, SdpaMaskPassing::bool_tensor);
  EXPECT_EQ(old.mask_shape, (std::vector<int64_t>{128, 512}));
  s.seq_kv = 0;
  EXPECT_EQ(sdpaCallFor(s, {2, 15, 0}).mask, SdpaMaskPassing::is_causal);
  s.mask = MaskSpec{MaskKind::dense};
  s.batch = 2;
  EXPECT_EQ(sdpaCallFor(s, {2, 15, 0}).mask_shape, (std::vector<int64_t>{1, 1, 128, 128}));
  s.mask_layout = MaskLayout::per_head;
  EXPECT_EQ(sdpaCallFor(s, {2, 15, 0}).mask_shape, (std::vector<int64_t>{2, 8, 128, 128}));
  s.kv_heads = 2;
  auto gqa = sdpaCallFor(s, {2, 5, 1});
  EXPECT_TRUE(gqa.enable_gqa);
  EXPECT_EQ(gqa.kv_heads, 2);
  auto rep = sdpaCallFor(s, {2, 4, 0});
  EXPECT_FALSE(rep.enable_gqa);
  EXPECT_TRUE(rep.kv_repeated);
  EXPECT_EQ(rep.kv_heads, 8);
}

TEST(LowerRight, BiasGoesStraightToFlashOnCudaAndMaterialisesOnCpu) {
  WorkloadSpec s;
  s.seq_q = 128;
  s.seq_kv = 512;
  s.dtype = DType::fp16;
  s.mask = MaskSpec{MaskKind::causal};
  const auto gpu = explainSdpa(s, defaultTorchTarget({2, 15, 0}, TorchDevice::cuda, {8, 0}), ExplainOptions{false});
  EXPECT_EQ(gpu.chosen, K::flash);
  EXPECT_EQ(gpu.verdicts.front().via, "causal_lower_right bias");
  auto cpu = defaultTorchTarget({2, 15, 0}, TorchDevice::cpu);
  const auto c = explainSdpa(s, cpu, ExplainOptions{false});
  EXPECT_EQ(c.chosen, K::flash);
  EXPECT_EQ(c.call.mask, SdpaMaskPassing::causal_lower_right);
  bool materialised = false;
  for (const auto& b : c.memory.plan.buffers) materialised |= b.name.starts_with("causal_lower_right mask bool");
  EXPECT_TRUE(materialised);
  // On sm75 with 2.15, flash is out (arch) and efficient takes the bias (custom_mask_type).
  const auto t4 = explainSdpa(s, defaultTorchTarget({2, 15, 0}, TorchDevice::cuda, {7, 5}), ExplainOptions{false});
  EXPECT_EQ(t4.chosen, K::efficient);
}

TEST(Parsing, VersionsGpusCudnn) {
  EXPECT_EQ(parseTorchVersion("2.5.1+cu124"), (TorchVersion{2, 5, 1}));
  EXPECT_EQ(parseTorchVersion("2.15.0a0+git1234"), (TorchVersion{2, 15, 0}));
  EXPECT_EQ(parseTorchVersion("2.10"), (TorchVersion{2, 10, 0}));
  EXPECT_FALSE(parseTorchVersion("1.13.1"));
  EXPECT_FALSE(parseTorchVersion("2.16"));
  EXPECT_FALSE(parseTorchVersion("two"));
  EXPECT_EQ(parseGpu("sm_80")->capability, (ComputeCapability{8, 0}));
  EXPECT_EQ(parseGpu("sm90a")->capability, (ComputeCapability{9, 0}));
  EXPECT_EQ(parseGpu("12.1")->capability, (ComputeCapability{12, 1}));
  EXPECT_EQ(parseGpu("rtx4090")->capability, (ComputeCapability{8, 9}));
  EXPECT_EQ(parseGpu("NVIDIA H200")->name, "H200");
  EXPECT_EQ(parseGpu("NVIDIA A100-SXM4-80GB")->capability, (ComputeCapability{8, 0}));
  EXPECT_EQ(parseGpu("Tesla V100-SXM2-16GB")->capability, (ComputeCapability{7, 0}));
  EXPECT_FALSE(parseGpu("sm99"));
  EXPECT_FALSE(parseGpu("Voodoo2"));
  EXPECT_EQ(parseCudnnVersion("91002"), (CudnnVersion{9, 10, 2}));
  EXPECT_EQ(parseCudnnVersion("8902"), (CudnnVersion{8, 9, 2}));
  EXPECT_FALSE(parseCudnnVersion("x"));
  EXPECT_EQ(kernelFromFusedSdpChoice(2), K::efficient);
  EXPECT_EQ(fusedSdpChoiceIndex(K::cudnn), 3);
}

// What real releases print is read; what only looks like a version is not (typos and near-misses:
// 2.5a, "2.5\n", 2.05, 2.15.99).
TEST(Parsing, RealVersionStringsOnly) {
  // torch.__version__ of PyPI wheels, nightlies, source builds, release candidates, ROCm.
  for (const char* v : {"2.0.1", "2.5.1+cu121", "2.6.0a0+git1234abc", "2.15.0", "2.15.0+cu132", "2.4.0rc1",
                        "2.15.0.dev20250101+cpu", "2.1.0+rocm5.6", "2.3.1.post1", "2.5.1+cpu.cxx11.abi", "2.5"})
    EXPECT_TRUE(parseTorchVersion(v)) << v;
  EXPECT_EQ(parseTorchVersion("2.6.0a0+git1234abc"), (TorchVersion{2, 6, 0}));
  EXPECT_EQ(parseTorchVersion("2.15.0.dev20250101+cpu"), (TorchVersion{2, 15, 0}));
  for (const char* v : {"2.5a", "2.5\n", " 2.5", "2.05", "02.5", "2.15.99", "2.5.10", "2.5.", "2.5.1.", "2.5.1+",
                        "2.5.1+cu 121", "2.5.1-cu121", "2.5rc", "2.5.1.2", "2", "2.16.0", "v2.5"})
    EXPECT_FALSE(parseTorchVersion(v)) << v;
  // cuDNN as torch.backends.cudnn.version() encodes it and as NVIDIA names releases; not pip's
  // four-part package version, nor numbers the encodings cannot hold.
  EXPECT_EQ(parseCudnnVersion("91002"), (CudnnVersion{9, 10, 2}));
  EXPECT_EQ(parseCudnnVersion("92600"), (CudnnVersion{9, 26, 0}));
  EXPECT_EQ(parseCudnnVersion("8902"), (CudnnVersion{8, 9, 2}));
  EXPECT_EQ(parseCudnnVersion("7605"), (CudnnVersion{7, 6, 5}));
  EXPECT_EQ(parseCudnnVersion("9.10.2"), (CudnnVersion{9, 10, 2}));
  EXPECT_EQ(parseCudnnVersion("9.1"), (CudnnVersion{9, 1, 0}));
  for (const char* v : {"9.10.2.3", "9.10.2.21", "9.01.2", "8.10.0", "9.100.0", "9.1.100", "6.0.0", "1000", "09100",
                        "9.10.2 ", "9..2", "9.10.", "-91002"})
    EXPECT_FALSE(parseCudnnVersion(v)) << v;
  // A GPU as a capability or a name as torch and nvidia-smi print it; nothing around it.
  for (const char* g : {"sm80", "SM80", "sm_80", "sm90a", "sm100f", "8.0", "80", "A100", "a100", "RTX 4090", "rtx4090",
                        "NVIDIA GeForce RTX 4090", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA A10G",
                        "NVIDIA RTX 6000 Ada Generation", "Quadro RTX 6000", "NVIDIA GeForce RTX 2080 Ti"})
    EXPECT_TRUE(parseGpu(g)) << g;
  EXPECT_EQ(parseGpu("NVIDIA GeForce RTX 2080 Ti")->name, "RTX 2080 Ti");
  EXPECT_EQ(parseGpu("NVIDIA RTX 6000 Ada Generation")->name, "RTX 6000 Ada");
  EXPECT_EQ(parseGpu("NVIDIA A10G")->capability, (ComputeCapability{8, 6}));
  for (const char* g : {" A100", "A100 ", "A100\n", "sm+80", "sm-80", "sm-60", "sm 80", "sm_", "8.", "8.0.0", "08.0",
                        "A  100", "XA100", "A100X", "sm80 ", "A100+", ""})
    EXPECT_FALSE(parseGpu(g)) << g;
}

TEST(Cliff, Width64Heads8To16Fp16BoolMaskOnSm70AndSm80) {
  WorkloadSpec s;
  s.width = 64;
  s.seq_q = 10000;
  s.dtype = DType::fp16;
  s.mask = MaskSpec{MaskKind::dense};
  for (const char* gpu : {"sm70", "sm80"}) {
    for (const char* torch : {"2.1", "2.4", "2.5.1", "2.10", "2.15"}) {
      const auto t = target(torch, gpu);
      s.heads = 8;
      const auto a = explainSdpa(s, t, ExplainOptions{false});
      s.heads = 16;
      const auto b = explainSdpa(s, t, ExplainOptions{false});
      EXPECT_EQ(a.chosen, K::efficient) << gpu << " " << torch;
      EXPECT_EQ(b.chosen, K::math) << gpu << " " << torch;
      EXPECT_GT(b.peakBytes(), 10 * a.peakBytes()) << gpu << " " << torch;
    }
  }
}

}  // namespace

TEST(Suggestions, EachPaddingIsOfferedOnce) {
  // head_dim 6 rounds to 8 for both alignments: one "pad head_dim 6 -> 8", not two. head_dim 5
  // offers 8 and, separately, no 4-alignment (8 again): once; head_dim 2 offers 8 and 4.
  WorkloadSpec s;
  s.heads = 4;
  s.seq_q = 512;
  s.dtype = DType::fp32;
  s.mask = MaskSpec{MaskKind::dense};
  const TorchTarget t = defaultTorchTarget({2, 15, 0}, TorchDevice::cuda, {8, 0});
  for (int64_t d : {5, 6, 7, 2}) {
    s.head_dim = d;
    const auto x = explainSdpa(s, t);
    std::map<std::string, int> seen;
    for (const auto& g : x.suggestions) ++seen[g.change];
    for (const auto& [change, n] : seen) EXPECT_EQ(n, 1) << "head_dim " << d << ": " << change;
  }
}
