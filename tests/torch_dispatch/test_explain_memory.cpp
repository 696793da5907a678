// Memory formulas (reference §4) against numbers measured with the real wheels: the reference's
// [cpu] measurements (2.1.0, 2.5.1, 2.15.0 profiler peaks) and profiler traces of the 2.15 wheel
// taken for this explainer. "extra" is what the call allocates at its peak beyond the caller's
// q, k, v and mask: the profiler's peak of the running total minus its base (reference §6.2).
// The 4-byte scalar tensors torch allocates (scalar_tensor) are not modelled: tolerance 16 bytes.
#include <optional>

#include <gtest/gtest.h>

#include "core/torch_dispatch/sdpa_explain.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;

namespace {

WorkloadSpec spec(int64_t heads, int64_t seq, int64_t d, DType dt, MaskKind mask) {
  WorkloadSpec s;
  s.heads = heads;
  s.seq_q = seq;
  s.head_dim = d;
  s.dtype = dt;
  s.mask = MaskSpec{mask};
  return s;
}

// An additive (float) mask [1,1,64,64] on B1 H2 L64 D16, in mask_dtype (empty: q's dtype).
WorkloadSpec additive(DType dt, std::optional<DType> mask_dtype) {
  WorkloadSpec s = spec(2, 64, 16, dt, MaskKind::additive);
  s.mask_dtype = mask_dtype;
  return s;
}

WorkloadSpec perHead(WorkloadSpec s) {
  s.mask_layout = MaskLayout::per_head;
  return s;
}

TorchTarget cpu(TorchVersion v, int threads = 2) {
  auto t = defaultTorchTarget(v, TorchDevice::cpu);
  t.cpu_threads = threads;
  return t;
}

int64_t forcedExtra(const WorkloadSpec& s, const TorchTarget& t, SdpaKernel k) {
  auto f = explainForcedSdpa(s, t, k);
  EXPECT_TRUE(f.verdict.usable) << f.verdict.torch_message;
  return f.memory.extraBytes();
}

constexpr TorchVersion v2_1{2, 1, 0}, v2_3_1{2, 3, 1}, v2_4_1{2, 4, 1}, v2_5_1{2, 5, 1}, v2_15{2, 15, 0};

}  // namespace

struct MeasuredCase {
  const char* what;
  TorchVersion version;
  WorkloadSpec spec;
  SdpaKernel kernel;
  bool reduction_flag;
  int64_t measured_extra;
};

class MeasuredMemory : public testing::TestWithParam<MeasuredCase> {};

TEST_P(MeasuredMemory, PredictionMatchesMeasuredPeak) {
  const auto& c = GetParam();
  auto t = cpu(c.version);
  t.allow_fp16_bf16_reduction_math = c.reduction_flag;
  const int64_t predicted = forcedExtra(c.spec, t, c.kernel);
  EXPECT_LE(std::abs(predicted - c.measured_extra), 16) << c.what << ": predicted " << predicted << " measured " << c.measured_extra;
}

INSTANTIATE_TEST_SUITE_P(
    Reference, MeasuredMemory,
    testing::Values(
        // reference §4.5: 2.1.0 fp32 L=S=2048 H=16 D=4 bool [1,1,L,L] -> 554.17 MB (exactly mask + q_s + 2 N·4)
        MeasuredCase{"2.1.0 math fp32 mask", v2_1, spec(16, 2048, 4, DType::fp32, MaskKind::dense), SdpaKernel::math, false, 554172416},
        // 2.5.1: fp32 L=2048 H=16 -> 889.75 MB; no mask 872.97 MB; fp16 L=1024 -> 221.27 MB, 119.69 MB with the flag
        MeasuredCase{"2.5.1 math fp32 mask", v2_5_1, spec(16, 2048, 4, DType::fp32, MaskKind::dense), SdpaKernel::math, false, 889749504},
        MeasuredCase{"2.5.1 math fp32 no mask", v2_5_1, spec(16, 2048, 4, DType::fp32, MaskKind::none), SdpaKernel::math, false, 872972288},
        MeasuredCase{"2.5.1 math fp16 mask", v2_5_1, spec(16, 1024, 4, DType::fp16, MaskKind::dense), SdpaKernel::math, false, 221265920},
        MeasuredCase{"2.5.1 math fp16 mask flag", v2_5_1, spec(16, 1024, 4, DType::fp16, MaskKind::dense), SdpaKernel::math, true, 119685120},
        // 2.15: fp32 L=2048 H=16 -> 621.31 MB; fp16 L=1024 -> 154.16 MB (86.13 MB with the flag)
        MeasuredCase{"2.15 math fp32 mask", v2_15, spec(16, 2048, 4, DType::fp32, MaskKind::dense), SdpaKernel::math, false, 621314052},
        MeasuredCase{"2.15 math fp16 mask", v2_15, spec(16, 1024, 4, DType::fp16, MaskKind::dense), SdpaKernel::math, false, 154157060},
        MeasuredCase{"2.15 math fp16 mask flag", v2_15, spec(16, 1024, 4, DType::fp16, MaskKind::dense), SdpaKernel::math, true, 86130688},
        // profiler traces of the 2.15 wheel (2 threads)
        MeasuredCase{"2.15 math fp32 none", v2_15, spec(16, 2048, 4, DType::fp32, MaskKind::none), SdpaKernel::math, false, 604536836},
        MeasuredCase{"2.15 math bf16 none", v2_15, spec(16, 1024, 4, DType::bf16, MaskKind::none), SdpaKernel::math, false, 152059908},
        MeasuredCase{"2.15 math fp32 causal", v2_15, spec(16, 1024, 4, DType::fp32, MaskKind::causal), SdpaKernel::math, false, 155467780},
        MeasuredCase{"2.15 cpu flash fp32 mask", v2_15, spec(16, 2048, 4, DType::fp32, MaskKind::dense), SdpaKernel::flash, false, 18493440},
        MeasuredCase{"2.15 cpu flash fp32 none", v2_15, spec(16, 2048, 4, DType::fp32, MaskKind::none), SdpaKernel::flash, false, 1716224},
        MeasuredCase{"2.15 cpu flash fp16 mask", v2_15, spec(16, 1024, 4, DType::fp16, MaskKind::dense), SdpaKernel::flash, false, 3878912},
        MeasuredCase{"2.15 cpu flash bf16 mask D8", v2_15, spec(16, 1024, 8, DType::bf16, MaskKind::dense), SdpaKernel::flash, false, 4018176},
        MeasuredCase{"2.15 cpu flash fp32 causal", v2_15, spec(16, 1024, 4, DType::fp32, MaskKind::causal), SdpaKernel::flash, false, 1388544},
        // Additive masks, profiler traces of each wheel (2 threads): no bool -> float conversion;
        // the math path copies a non-fp32 mask to fp32 when it computes in fp32 (2.5+ upcast), an
        // fp32 mask into half scores goes through two fp32 score-sized buffers (2.4), and 2.3's CPU
        // flash reads a half mask through an fp32 copy.
        MeasuredCase{"2.15 math fp32 additive", v2_15, additive(DType::fp32, {}), SdpaKernel::math, false, 82052},
        MeasuredCase{"2.15 math bf16 additive fp32", v2_15, additive(DType::bf16, DType::fp32), SdpaKernel::math, false, 106628},
        MeasuredCase{"2.15 math bf16 additive bf16", v2_15, additive(DType::bf16, {}), SdpaKernel::math, false, 106628},
        MeasuredCase{"2.15 cpu flash bf16 additive fp32", v2_15, additive(DType::bf16, DType::fp32), SdpaKernel::flash, false, 33792},
        MeasuredCase{"2.5.1 math bf16 additive fp32", v2_5_1, additive(DType::bf16, DType::fp32), SdpaKernel::math, false, 139400},
        MeasuredCase{"2.4.1 math bf16 additive fp32", v2_4_1, additive(DType::bf16, DType::fp32), SdpaKernel::math, false, 86016},
        MeasuredCase{"2.3.1 math bf16 additive bf16", v2_3_1, additive(DType::bf16, {}), SdpaKernel::math, false, 36864},
        MeasuredCase{"2.3.1 cpu flash bf16 additive bf16", v2_3_1, additive(DType::bf16, {}), SdpaKernel::flash, false, 50176},
        MeasuredCase{"2.3.1 cpu flash fp32 additive", v2_3_1, additive(DType::fp32, {}), SdpaKernel::flash, false, 29696},
        // 2.6.0 already converts a bool mask with where(mask, 0, -inf) (variant C, no logical_not copy).
        MeasuredCase{"2.6.0 math fp32 mask", TorchVersion{2, 6, 0}, spec(2, 64, 16, DType::fp32, MaskKind::dense), SdpaKernel::math, false, 98436},
        // ...where the conversion is the peak (a per-head mask, head_dim 1): no logical_not copy.
        MeasuredCase{"2.6.0 cpu flash fp32 per-head mask D1", TorchVersion{2, 6, 0}, perHead(spec(8, 64, 1, DType::fp32, MaskKind::dense)),
                     SdpaKernel::flash, false, 152320},
        // CPU flash's q split: 64 rows below seq 768, 256 from 768 (2.15, 2 threads).
        MeasuredCase{"2.15 cpu flash L767", v2_15, spec(2, 767, 16, DType::fp32, MaskKind::none), SdpaKernel::flash, false, 375672},
        MeasuredCase{"2.15 cpu flash L768", v2_15, spec(2, 768, 16, DType::fp32, MaskKind::none), SdpaKernel::flash, false, 1189888}));

// Training figures from the 2.15 wheel's profiler (2 threads): what the forward keeps and the
// backward's peak, where AccumulateGrad's layout copies are skipped (head_dim 1: k's grad is
// already in k's layout; seq 1: the flash gradients' [B,L,H,D] is [B,H,L,D]).
TEST(TrainingMemory, AccumulateGradCopiesOnlyWhereTheLayoutsDiffer) {
  auto t = cpu(v2_15);
  t.requires_grad = true;
  const auto math = explainForcedSdpa(spec(2, 64, 1, DType::fp32, MaskKind::none), t, SdpaKernel::math);
  ASSERT_TRUE(math.verdict.usable);
  EXPECT_NEAR(math.memory.keptBytes(), 34304, 32);
  EXPECT_NEAR(math.memory.backwardExtraBytes(), 66048, 32);
  WorkloadSpec decode = spec(4, 1, 16, DType::fp32, MaskKind::none);
  decode.seq_kv = 40;
  const auto flash = explainForcedSdpa(decode, t, SdpaKernel::flash);
  ASSERT_TRUE(flash.verdict.usable);
  EXPECT_NEAR(flash.memory.keptBytes(), 272, 32);
  EXPECT_NEAR(flash.memory.backwardExtraBytes(), 30960, 32);
  // The copies the traces show, step by step: none for the math path at head_dim 1 (D = 16 has
  // k's), k's and v's but not q's for flash at seq 1 (each 4·40·16·4 = 10240 B).
  auto steps = [](const SdpaMemory& m) {
    std::string all;
    for (const auto& st : m.plan.steps) all += st + "|";
    return all;
  };
  EXPECT_EQ(steps(math.memory).find("AccumulateGrad"), std::string::npos) << steps(math.memory);
  const auto math16 = explainForcedSdpa(spec(2, 64, 16, DType::fp32, MaskKind::none), t, SdpaKernel::math);
  EXPECT_NE(steps(math16.memory).find("k.grad: AccumulateGrad"), std::string::npos) << steps(math16.memory);
  EXPECT_EQ(steps(flash.memory).find("q.grad: AccumulateGrad"), std::string::npos) << steps(flash.memory);
  EXPECT_NE(steps(flash.memory).find("k.grad: AccumulateGrad"), std::string::npos) << steps(flash.memory);
  EXPECT_NE(steps(flash.memory).find("v.grad: AccumulateGrad"), std::string::npos) << steps(flash.memory);
}

TEST(AdditiveMask, AnFp32MaskWithHalfInputsRaisesBefore2_4) {
  // Measured: 2.0.1 and 2.3.1 raise in validate_sdpa_input; 2.4.1 onwards take an fp32 mask.
  for (TorchVersion v : {TorchVersion{2, 0, 1}, v2_3_1}) {
    const auto x = explainSdpa(additive(DType::bf16, DType::fp32), cpu(v), ExplainOptions{false});
    EXPECT_NE(x.error.find("Expected attn_mask dtype to be bool or to match query dtype"), std::string::npos) << v.text() << ": " << x.error;
  }
  for (TorchVersion v : {v2_4_1, v2_15}) {
    const auto x = explainSdpa(additive(DType::bf16, DType::fp32), cpu(v), ExplainOptions{false});
    EXPECT_TRUE(x.error.empty()) << v.text() << ": " << x.error;
  }
  const auto same = explainSdpa(additive(DType::bf16, {}), cpu(v2_3_1), ExplainOptions{false});
  EXPECT_TRUE(same.error.empty()) << same.error;
  EXPECT_EQ(same.call.mask, SdpaMaskPassing::float_tensor);
  EXPECT_EQ(same.call.maskBytes(), 64 * 64 * 2);
}

TEST(CpuFlashBuffers, ReferenceWorkedExample) {
  // reference §4.6: T = 2, qS = 256, kvS = 512, D = 4: buf = 2·(131072+512+1024)·4 = 1,060,864 B
  EXPECT_EQ(cpuFlashQSplit(2048), 256);
  EXPECT_EQ(cpuFlashQSplit(500), 64);
  EXPECT_EQ(cpuFlashQSplit(100), 32);
  EXPECT_EQ(cpuFlashQSplit(20), 20);
  EXPECT_EQ(cpuFlashKvSplit(2048), 512);
  EXPECT_EQ(cpuFlashKvSplit(300), 300);
  auto f = explainForcedSdpa(spec(16, 2048, 4, DType::fp32, MaskKind::none), cpu(v2_15, 2), SdpaKernel::flash);
  bool found = false;
  for (const auto& b : f.memory.plan.buffers)
    if (b.name.starts_with("per-thread buffer fp32")) {
      EXPECT_EQ(b.bytes, 1060864);
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(FlashPadding, HeadDimIsPaddedToAMultipleOf8From2_2) {
  // Reference §4.3: the composite pads q, k, v to the next multiple of 8 (pad_last_dim<8>) when
  // D % 8 != 0; a multiple of 8 that is not one of 16 (24, 40) is not padded.
  const TorchTarget cuda = defaultTorchTarget(v2_5_1, TorchDevice::cuda, {8, 0});
  for (int64_t d : {8, 24, 40, 36, 20}) {
    SCOPED_TRACE("head_dim " + std::to_string(d));
    const WorkloadSpec s = spec(4, 256, d, DType::fp16, MaskKind::none);
    const auto f = explainForcedSdpa(s, cuda, SdpaKernel::flash);
    ASSERT_TRUE(f.verdict.usable) << f.verdict.torch_message;
    const int64_t d8 = (d + 7) / 8 * 8;
    int64_t padded_q = -1, output = -1;
    for (const auto& b : f.memory.plan.buffers) {
      if (b.name.starts_with("q padded")) padded_q = b.bytes;
      if (b.name.starts_with("output")) output = b.bytes;
    }
    if (d % 8 == 0) EXPECT_EQ(padded_q, -1) << "a head_dim that is a multiple of 8 is not padded";
    else EXPECT_EQ(padded_q, 1 * 4 * 256 * d8 * 2);
    EXPECT_EQ(output, 1 * 256 * 4 * d8 * 2);
  }
}

TEST(TrainingMemory, TheMaterialisedLowerRightMaskDiesWithTheForward) {
  // Measured on 2.3.1 and 2.9.1 (B1 H3 L33x77 D64 fp16 causal, training): autograd keeps the
  // kernel's converted mask, not causal_lower_right's bool [Lq,Lkv], so kept has no L·S bytes.
  WorkloadSpec s = spec(3, 33, 64, DType::fp16, MaskKind::causal);
  s.seq_kv = 77;
  for (TorchVersion v : {v2_3_1, TorchVersion{2, 9, 1}}) {
    auto t = cpu(v);
    t.requires_grad = true;
    const auto x = explainSdpa(s, t, ExplainOptions{false});
    ASSERT_TRUE(x.chosen && *x.chosen == SdpaKernel::flash) << v.text();
    EXPECT_EQ(x.memory.keptBytes(), 18150) << v.text();  // the profiler's figure on both releases
  }
}

TEST(TrainingMemory, CpuFlashCopiesGradOutputOnlyWhenHeadsAndSeqExceedOne) {
  // 2.5+: grad_output.transpose(1, 2) is already contiguous at L = 1 (MQA decode, measured on
  // 2.9.1: B2 H4/1 L1x40 D64 fp16 backward 22468 B, no q-sized copy).
  WorkloadSpec s = spec(4, 1, 64, DType::fp16, MaskKind::none);
  s.batch = 2;
  s.kv_heads = 1;
  s.seq_kv = 40;
  auto t = cpu(TorchVersion{2, 9, 1});
  t.requires_grad = true;
  const auto x = explainSdpa(s, t, ExplainOptions{false});
  ASSERT_TRUE(x.chosen && *x.chosen == SdpaKernel::flash);
  EXPECT_NEAR(x.memory.backwardExtraBytes(), 22468, 32);
  for (const auto& b : x.memory.plan.buffers) EXPECT_FALSE(b.name.starts_with("grad_output copy")) << b.name;
  s.seq_q = 8;  // L > 1: the copy is there
  const auto y = explainSdpa(s, t, ExplainOptions{false});
  bool copy = false;
  for (const auto& b : y.memory.plan.buffers) copy = copy || b.name.starts_with("grad_output copy");
  EXPECT_TRUE(copy);
}

TEST(ForcedKernel, Torch2_0OnTheCpuRunsMathWhateverIsForced) {
  // Measured on 2.0.1: sdp_kernel(enable_flash only) on CPU tensors runs the math ops.
  const auto f = explainForcedSdpa(spec(4, 64, 64, DType::fp32, MaskKind::none), cpu(TorchVersion{2, 0, 1}), SdpaKernel::flash);
  EXPECT_TRUE(f.verdict.usable);
  EXPECT_EQ(f.verdict.kernel, SdpaKernel::math);
  const auto g = explainForcedSdpa(spec(4, 64, 64, DType::fp32, MaskKind::none), cpu(TorchVersion{2, 1, 2}), SdpaKernel::flash);
  EXPECT_EQ(g.verdict.kernel, SdpaKernel::flash);
}
