// The additive (float) mask: its text, its mask_dtype field and their rules, its values, its
// bytes, its .npy files, and the float64 reference against a naive computation written here from
// the definition (workload_spec.h: the bias is added to the scaled scores, -inf drops a key, a row
// with no key left outputs zeros).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/base/random.h"
#include "core/check/reference.h"
#include "core/inputs/run_files.h"
#include "core/spec/mask.h"
#include "core/spec/spec_fields.h"
#include "tests/support/spec_builder.h"
#include "tests/support/temp_dir.h"

using namespace attnscope;

namespace {

// The error validate(s) gives for `field`, if any (a copy: validate returns a temporary).
std::optional<SpecError> errorFor(const WorkloadSpec& s, const std::string& field) {
  for (const SpecError& e : validate(s))
    if (e.field == field) return e;
  return std::nullopt;
}

WorkloadSpec additive(const char* mask, DType dtype, std::optional<DType> mask_dtype, MaskLayout layout,
                      int64_t head_dim = 3) {
  WorkloadSpec s = test::specOf({.batch = 2, .heads = 4, .kv_heads = 2, .seq_q = 5, .seq_kv = 7, .head_dim = head_dim,
                                 .dtype = dtype, .mask = mask, .layout = layout, .seed = 11});
  s.mask_dtype = mask_dtype;
  return s;
}

// Written from the definition, sharing nothing with core/check: the bias of element index idx in
// the mask's layout is 2 u - 1 rounded to the mask's dtype (u the mask_bias stream's uniform), and
// the key is dropped when the mask stream's uniform is not below p.
double naiveBias(const WorkloadSpec& s, uint64_t idx) {
  if (s.mask.keep_prob < 1.0 && uniform01(s.seed, RandomStream::mask, idx) >= s.mask.keep_prob) return -INFINITY;
  const float raw = static_cast<float>(2.0 * uniform01(s.seed, RandomStream::mask_bias, idx) - 1.0);
  const DType d = s.mask_dtype.value_or(s.dtype);
  return d == DType::fp16 ? halfToFloat(floatToHalf(raw)) : d == DType::bf16 ? bf16ToFloat(floatToBf16(raw)) : raw;
}

std::vector<double> naiveOutput(const WorkloadSpec& s, const HostInputs& in) {
  const int64_t B = s.batch, H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  std::vector<double> out(static_cast<size_t>(B * H * Lq * D), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        std::vector<double> score(static_cast<size_t>(Lkv));
        double mx = -INFINITY;
        for (int64_t j = 0; j < Lkv; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(in.q.at(((b * H + h) * Lq + i) * D + d)) * in.k.at(((b * Hkv + h / (H / Hkv)) * Lkv + j) * D + d);
          const uint64_t idx = static_cast<uint64_t>(s.mask_layout == MaskLayout::per_head ? ((b * H + h) * Lq + i) * Lkv + j
                                                                                          : i * Lkv + j);
          score[j] = dot * s.effectiveScale() + naiveBias(s, idx);
          mx = std::max(mx, score[j]);
        }
        if (mx == -INFINITY) continue;  // every key dropped: zeros
        double sum = 0;
        for (double& x : score) sum += (x = std::exp(x - mx));
        for (int64_t j = 0; j < Lkv; ++j)
          for (int64_t d = 0; d < D; ++d)
            out[static_cast<size_t>(((b * H + h) * Lq + i) * D + d)] +=
                score[j] / sum * in.v.at(((b * Hkv + h / (H / Hkv)) * Lkv + j) * D + d);
      }
  return out;
}

std::vector<int64_t> everyRow(const WorkloadSpec& s) {
  std::vector<int64_t> rows(static_cast<size_t>(s.batch * s.heads * s.seq_q));
  for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
  return rows;
}

}  // namespace

TEST(AdditiveMask, ParsesPrintsAndTakesFloatAsAnAlias) {
  for (const auto& [text, printed, p] : std::vector<std::tuple<std::string, std::string, double>>{
           {"additive", "additive", 1.0}, {"additive:0.5", "additive:0.5", 0.5}, {"float", "additive", 1.0},
           {"float:0.25", "additive:0.25", 0.25}, {"additive:1", "additive", 1.0}}) {
    const ParsedMask m = parseMask(text);
    ASSERT_TRUE(m.mask) << text << ": " << m.error->message;
    EXPECT_EQ(m.mask->kind, MaskKind::additive) << text;
    EXPECT_EQ(m.mask->keep_prob, p) << text;
    EXPECT_EQ(toString(*m.mask), printed) << text;
  }
  EXPECT_EQ(toString(MaskKind::additive), "additive");
  for (const char* bad : {"additive:0", "additive:1.5", "additive:x", "float:-1", "additive:"}) {
    const ParsedMask m = parseMask(bad);
    ASSERT_FALSE(m.mask) << bad;
    EXPECT_EQ(m.error->field, "mask");
    EXPECT_NE(m.error->message.find("additive mask keep-probability"), std::string::npos) << m.error->message;
  }
  EXPECT_NE(parseMask("bias").error->message.find("additive[:p]"), std::string::npos) << "the allowed list names it";
}

TEST(AdditiveMask, MaskDTypeParsesAndIsValidatedAgainstTheMaskAndQ) {
  WorkloadSpec s;
  EXPECT_FALSE(setField(s, "mask", "additive"));
  EXPECT_FALSE(setField(s, "mask-dtype", "fp32"));  // the CLI name
  EXPECT_EQ(s.mask_dtype, DType::fp32);
  EXPECT_FALSE(setField(s, "mask_dtype", "q"));
  EXPECT_EQ(s.mask_dtype, std::nullopt);
  EXPECT_FALSE(setField(s, "mask_dtype", "fp16"));
  EXPECT_FALSE(setField(s, "mask_dtype", ""));
  EXPECT_EQ(s.mask_dtype, std::nullopt);
  EXPECT_EQ(s.maskDType(), DType::fp32);
  const auto bad = setField(s, "mask_dtype", "fp64");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->field, "mask_dtype");
  EXPECT_NE(bad->message.find("fp32, fp16, bf16"), std::string::npos) << bad->message;

  // torch: a float mask is fp32 or q's dtype.
  WorkloadSpec ok = additive("additive", DType::bf16, DType::fp32, MaskLayout::broadcast);
  EXPECT_TRUE(validate(ok).empty()) << describe(validate(ok));
  ok.mask_dtype = DType::bf16;
  EXPECT_TRUE(validate(ok).empty()) << describe(validate(ok));
  ok.mask_dtype = std::nullopt;
  EXPECT_EQ(ok.maskDType(), DType::bf16);
  EXPECT_TRUE(validate(ok).empty());
  WorkloadSpec mismatch = additive("additive", DType::bf16, DType::fp16, MaskLayout::per_head);
  std::optional<SpecError> e = errorFor(mismatch, "mask_dtype");
  ASSERT_TRUE(e) << describe(validate(mismatch));
  EXPECT_NE(e->message.find("allowed: q, fp32, bf16"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("fp16"), std::string::npos) << e->message;
  mismatch = additive("additive", DType::fp32, DType::bf16, MaskLayout::broadcast);
  e = errorFor(mismatch, "mask_dtype");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("allowed: q, fp32)"), std::string::npos) << e->message;

  // Only an additive mask has a dtype.
  for (const char* other : {"none", "causal", "dense:0.5", "window:4"}) {
    WorkloadSpec w = additive(other, DType::fp16, DType::fp16, MaskLayout::broadcast);
    w.seq_kv = 0;
    e = errorFor(w, "mask_dtype");
    ASSERT_TRUE(e) << other;
    EXPECT_NE(e->message.find("only for an additive mask"), std::string::npos) << e->message;
  }
  // per_head is a layout of the additive mask as of the dense one.
  EXPECT_TRUE(validate(additive("additive:0.5", DType::fp16, std::nullopt, MaskLayout::per_head)).empty());
}

TEST(AdditiveMask, BytesAreCountedAtTheMaskDType) {
  WorkloadSpec s = additive("additive", DType::fp16, std::nullopt, MaskLayout::broadcast);
  EXPECT_EQ(s.maskElements(), 5 * 7);
  EXPECT_EQ(s.maskBytes(), 5 * 7 * 2);
  s.mask_dtype = DType::fp32;
  EXPECT_EQ(s.maskBytes(), 5 * 7 * 4);
  s.mask_layout = MaskLayout::per_head;
  EXPECT_EQ(s.maskBytes(), 2 * 4 * 5 * 7 * 4);
  EXPECT_EQ(s.ioBytes(), 2 * s.qElements() * 2 + 2 * s.kvElements() * 2 + 2 * 4 * 5 * 7 * 4);
  s.mask = parseMask("dense").mask.value();
  s.mask_dtype.reset();
  EXPECT_EQ(s.maskBytes(), 2 * 4 * 5 * 7);  // bool: 1 byte
  s.mask = parseMask("causal").mask.value();
  EXPECT_EQ(s.maskBytes(), 0);
}

TEST(AdditiveMask, ValuesAreSeededRoundedAndDropWhatDenseDrops) {
  WorkloadSpec s = additive("additive:0.5", DType::fp16, std::nullopt, MaskLayout::per_head);
  WorkloadSpec dense = s;
  dense.mask.kind = MaskKind::dense;
  dense.mask_dtype.reset();
  int64_t dropped = 0, finite = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.seq_q; ++i)
        for (int64_t j = 0; j < s.seqKv(); ++j) {
          const float v = additiveMaskValue(s, b, h, i, j);
          EXPECT_EQ(v, additiveMaskValue(s, b, h, i, j));
          EXPECT_EQ(std::isinf(v), !denseMaskValue(dense, b, h, i, j)) << b << h << i << j;
          if (std::isinf(v)) {
            EXPECT_LT(v, 0.0f);
            ++dropped;
            continue;
          }
          ++finite;
          EXPECT_GE(v, -1.0f);
          EXPECT_LE(v, 1.0f);
          EXPECT_EQ(v, roundTo(DType::fp16, v)) << "not an fp16 value";
        }
  EXPECT_GT(dropped, 40);
  EXPECT_GT(finite, 40);
  // p = 1 drops nothing; another seed gives other values; broadcast ignores b and h.
  s.mask.keep_prob = 1.0;
  s.mask_layout = MaskLayout::broadcast;
  const std::vector<float> all = makeAdditiveMask(s);
  ASSERT_EQ(static_cast<int64_t>(all.size()), s.maskElements());
  for (float v : all) EXPECT_TRUE(std::isfinite(v));
  EXPECT_EQ(additiveMaskValue(s, 0, 0, 3, 4), additiveMaskValue(s, 1, 3, 3, 4));
  EXPECT_EQ(all[3 * 7 + 4], additiveMaskValue(s, 0, 0, 3, 4));
  WorkloadSpec other = s;
  other.seed = 12;
  EXPECT_NE(makeAdditiveMask(other), all);
  // In fp32 the same draw keeps its float value.
  s.mask_dtype = DType::fp32;
  EXPECT_EQ(additiveMaskValue(s, 0, 0, 3, 4),
            static_cast<float>(2.0 * uniform01(s.seed, RandomStream::mask_bias, 3 * 7 + 4) - 1.0));
}

TEST(AdditiveMask, GeneratedInputsHoldTheMaskInItsDType) {
  const WorkloadSpec s = additive("additive:0.5", DType::bf16, DType::fp32, MaskLayout::per_head);
  const HostInputs in = HostInputs::generate(s);
  EXPECT_TRUE(in.mask.empty());
  EXPECT_EQ(in.additive_mask.dtype, DType::fp32);
  EXPECT_EQ(in.additive_mask.shape, (std::vector<int64_t>{2, 4, 5, 7}));
  EXPECT_EQ(static_cast<int64_t>(in.additive_mask.bytes.size()), s.maskBytes());
  const std::vector<float> want = makeAdditiveMask(s);
  for (int64_t e = 0; e < in.additive_mask.elements(); ++e) EXPECT_EQ(in.additive_mask.at(e), want[static_cast<size_t>(e)]);
}

TEST(AdditiveMask, ReferenceMatchesANaiveComputation) {
  for (DType dtype : {DType::fp32, DType::fp16, DType::bf16})
    for (std::optional<DType> md : {std::optional<DType>{}, std::optional<DType>{DType::fp32}})
      for (MaskLayout layout : {MaskLayout::broadcast, MaskLayout::per_head})
        for (const char* mask : {"additive", "additive:0.5", "additive:0.1"}) {
          const WorkloadSpec s = additive(mask, dtype, md, layout);
          SCOPED_TRACE(summary(s));
          ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
          const HostInputs in = HostInputs::generate(s);
          std::vector<double> ref;
          std::vector<char> keyless;
          referenceRows(s, in, everyRow(s), ref, nullptr, &keyless);
          const std::vector<double> want = naiveOutput(s, in);
          ASSERT_EQ(ref.size(), want.size());
          for (size_t e = 0; e < ref.size(); ++e) ASSERT_NEAR(ref[e], want[e], 1e-12) << "element " << e;
          // The bias matters: without it the reference is another answer.
          WorkloadSpec plain = s;
          plain.mask = parseMask("none").mask.value();
          plain.mask_dtype.reset();
          std::vector<double> none;
          referenceRows(plain, in, everyRow(plain), none);
          double diff = 0;
          for (size_t e = 0; e < ref.size(); ++e) diff = std::max(diff, std::fabs(ref[e] - none[e]));
          EXPECT_GT(diff, 1e-3);
        }
}

TEST(AdditiveMask, ReferenceAtLargeHeadDims) {
  for (int64_t d : {257, 320, 512}) {
    const WorkloadSpec s = additive("additive:0.5", DType::fp16, DType::fp32, MaskLayout::per_head, d);
    ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
    const HostInputs in = HostInputs::generate(s);
    std::vector<double> ref;
    referenceRows(s, in, everyRow(s), ref);
    const std::vector<double> want = naiveOutput(s, in);
    for (size_t e = 0; e < ref.size(); ++e) ASSERT_NEAR(ref[e], want[e], 1e-12) << "D " << d << " element " << e;
  }
}

// A row whose every key is -inf outputs zeros and is marked keyless, as a dense row with no key.
TEST(AdditiveMask, ARowWithEveryKeyDroppedIsZero) {
  WorkloadSpec s = test::specOf({.heads = 1, .seq_q = 64, .seq_kv = 2, .head_dim = 4, .mask = "additive:0.3", .seed = 3});
  const HostInputs in = HostInputs::generate(s);
  std::vector<double> ref;
  std::vector<char> keyless;
  referenceRows(s, in, everyRow(s), ref, nullptr, &keyless);
  int64_t empty = 0;
  for (int64_t i = 0; i < s.seq_q; ++i) {
    const bool none = std::isinf(in.additive_mask.at(i * 2)) && std::isinf(in.additive_mask.at(i * 2 + 1));
    EXPECT_EQ(keyless[static_cast<size_t>(i)] != 0, none) << i;
    if (!none) continue;
    ++empty;
    for (int64_t d = 0; d < 4; ++d) EXPECT_EQ(ref[static_cast<size_t>(i * 4 + d)], 0.0);
  }
  EXPECT_GT(empty, 0) << "seed 3 at p 0.3 has rows without a key (0.49 of them)";
  std::vector<float> out(ref.begin(), ref.end());
  EXPECT_TRUE(checkAccuracy(s, in, out).passed());
}

TEST(AdditiveMask, NpyFilesRoundTripAndRefuseNaN) {
  test::TempDir dir;
  for (DType md : {DType::fp32, DType::fp16, DType::bf16}) {
    const WorkloadSpec s = additive("additive:0.5", md, md, MaskLayout::per_head);
    const HostInputs in = HostInputs::generate(s);
    const NpyArray m = maskNpy(s, in);
    EXPECT_EQ(m.descr, md == DType::fp16 ? "<f2" : "<f4");
    EXPECT_EQ(m.shape, (std::vector<int64_t>{2, 4, 5, 7}));
    const auto names = dumpFileNames(s);
    EXPECT_NE(std::find(names.begin(), names.end(), "mask.npy"), names.end());
    dumpRun(dir.str(), s, in, std::vector<float>(static_cast<size_t>(s.qElements()), 0.0f));
    const HostInputs back = loadInputs(dir.str(), s);
    EXPECT_EQ(back.additive_mask.dtype, md);
    EXPECT_EQ(back.additive_mask.bytes, in.additive_mask.bytes) << toString(md);
    // The mask of another dtype or layout is refused, naming what it should be.
    WorkloadSpec wrong = s;
    wrong.mask_layout = MaskLayout::broadcast;
    EXPECT_THROW(loadInputs(dir.str(), wrong), std::invalid_argument);
  }
  // A NaN in the mask is refused; -inf is what drops a key and is read.
  WorkloadSpec s = additive("additive", DType::fp32, std::nullopt, MaskLayout::broadcast);
  HostInputs in = HostInputs::generate(s);
  in.additive_mask.set(3, -INFINITY);
  dumpRun(dir.str(), s, in, std::vector<float>(static_cast<size_t>(s.qElements()), 0.0f));
  EXPECT_EQ(loadInputs(dir.str(), s).additive_mask.at(3), -INFINITY);
  in.additive_mask.set(4, std::numeric_limits<float>::quiet_NaN());
  dumpRun(dir.str(), s, in, std::vector<float>(static_cast<size_t>(s.qElements()), 0.0f));
  try {
    (void)loadInputs(dir.str(), s);
    ADD_FAILURE() << "a NaN mask was read";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("finite or -inf"), std::string::npos) << e.what();
  }
}

TEST(AdditiveMask, SpecTextsSayTheMaskItsLayoutAndDType) {
  WorkloadSpec s = additive("additive:0.5", DType::fp16, DType::fp32, MaskLayout::per_head);
  EXPECT_NE(summary(s).find(" additive:0.5/per_head/fp32"), std::string::npos) << summary(s);
  s.mask_dtype.reset();
  EXPECT_NE(summary(s).find(" additive:0.5/per_head"), std::string::npos) << summary(s);
  EXPECT_EQ(summary(s).find("/fp"), std::string::npos) << summary(s);
  // The CSV cell and the torch worker's request resolve it to the dtype used.
  EXPECT_EQ(findSpecField("mask_dtype")->cell(s), "fp16");
  EXPECT_EQ(resolvedSpec(s).mask_dtype, DType::fp16);
  s.mask = parseMask("none").mask.value();
  EXPECT_EQ(findSpecField("mask_dtype")->cell(s), "");
  EXPECT_EQ(toJson(s).at("mask_dtype"), nullptr);
}
