// The explainer's CUDA memory formulas and suggestions, pinned against
// shared/reference/torch-sdpa.md §4 (issue 25; the rules and order: test_explain_cuda_table.cpp).
// Expected values are written from the reference's formulas, never computed by the code under
// test.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/torch_dispatch/sdpa_explain.h"
#include "tests/torch_dispatch/cuda_table.h"

using namespace attnscope;
using namespace attnscope::torch_dispatch;
using namespace attnscope::torch_dispatch::cuda_table;

namespace {

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

}  // namespace
