#include <gtest/gtest.h>

#include <limits>

#include <nlohmann/json.hpp>

#include "core/spec/dtype.h"
#include "core/spec/mask.h"
#include "core/spec/workload_spec.h"

using namespace attnscope;

namespace {

// The error list for a spec must name `field` and its message must contain every fragment.
void expectError(const WorkloadSpec& s, const std::string& field, std::initializer_list<std::string> fragments) {
  auto errs = validate(s);
  auto it = std::find_if(errs.begin(), errs.end(), [&](const SpecError& e) { return e.field == field; });
  ASSERT_NE(it, errs.end()) << "no error for field " << field << "; got: " << describe(errs);
  for (const auto& f : fragments) EXPECT_NE(it->message.find(f), std::string::npos) << it->message << " lacks " << f;
}

}  // namespace

TEST(WorkloadSpec, DefaultsAreValid) { EXPECT_TRUE(validate(WorkloadSpec{}).empty()); }

TEST(WorkloadSpec, EveryBadFieldIsNamedWithValueAndAllowed) {
  WorkloadSpec s;
  s.heads = 0;
  expectError(s, "heads", {"heads", ">= 1", "0"});
  s = {};
  s.heads = -3;
  expectError(s, "heads", {"-3"});
  s = {};
  s.heads = 8;
  s.kv_heads = 3;
  expectError(s, "kv_heads", {"divide", "8", "3"});
  s = {};
  s.width = 100;
  s.heads = 8;
  expectError(s, "width", {"100", "divisible", "8"});
  s = {};
  s.head_dim = 0;
  expectError(s, "head_dim", {"1..512", "0"});
  s.head_dim = 513;
  expectError(s, "head_dim", {"513"});
  s.head_dim = 512;  // torch runs it on the CPU, and so do cpu.*
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s = {};
  s.heads = 2;
  s.width = 1026;  // head_dim 513 through the width
  expectError(s, "width", {"513", "512"});
  s = {};
  s.seq_q = 0;
  expectError(s, "seq", {">= 1", "0"});
  s = {};
  s.mask = {MaskKind::window, 0, 1.0};
  expectError(s, "mask", {"width", ">= 1"});
  s.mask = {MaskKind::block, 0, 1.0};
  expectError(s, "mask", {"width"});
  s = {};
  s.mask = {MaskKind::block, 16, 1.0};
  s.seq_q = 64;
  s.seq_kv = 128;
  expectError(s, "mask", {"seq == seq_kv", "64", "128"});
  s = {};
  s.mask = {MaskKind::dense, 0, 0.0};
  expectError(s, "mask", {"(0, 1]", "0"});
  s.mask.keep_prob = 1.5;
  expectError(s, "mask", {"1.5"});
  s = {};
  s.scale = -1.0;
  expectError(s, "scale", {"> 0"});
}

// Stacks and tensor parallelism belong to kind layer; tp must split the heads and the kv heads.
TEST(WorkloadSpec, LayersAndTensorParallelRules) {
  WorkloadSpec s;
  s.layers = 3;
  expectError(s, "layers", {"layers 3", "kind layer"});
  s.kind = WorkloadKind::layer;
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s.layers = 0;
  expectError(s, "layers", {"1..128", "0"});
  s = {};
  s.pass = Pass::train;
  s.checkpoint = Checkpoint::layer;
  expectError(s, "checkpoint", {"kind layer"});
  s.kind = WorkloadKind::layer;
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s = {};
  s.tp = 2;
  expectError(s, "tp", {"kind layer"});
  s.kind = WorkloadKind::layer;
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s.tp = 3;
  expectError(s, "tp", {"divide heads", "3", "8"});
  s.tp = 2;
  s.kv_heads = 1;
  expectError(s, "tp", {"kv_heads", "1"});
  s.kv_heads = 2;
  s.tp_comm = TpComm::gather;
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s.tp = 1;
  expectError(s, "tp_comm", {"gather", "tp >= 2"});
  s.tp = 65;
  expectError(s, "tp", {"1..64"});
}

TEST(WorkloadSpec, OversizedTensorsBlameTheirLargestFieldWithItsMaximum) {
  WorkloadSpec s;
  s.heads = int64_t{1} << 45;
  expectError(s, "heads", {"Q/O tensor", "at most 17179869184"});  // 2^50 / (1 * 1024 * 64)
  s = {};
  s.batch = int64_t{1} << 30;
  s.seq_q = 1 << 20;
  expectError(s, "batch", {"at most 2097152"});  // 2^50 / (8 * 2^20 * 64)
  s = {};
  s.seq_q = 1;
  s.seq_kv = int64_t{1} << 50;
  expectError(s, "seq_kv", {"K/V tensor"});
  // The largest value a field can take: its maximum is searched without overflowing (found by
  // fuzz_spec: --batch 9223372036854775807).
  s = {};
  s.batch = std::numeric_limits<int64_t>::max();
  expectError(s, "batch", {"at most"});
  s = {};
  s.heads = int64_t{1} << 62;  // would overflow int64 on the way, not just exceed the limit
  s.seq_q = int64_t{1} << 40;
  EXPECT_FALSE(validate(s).empty());
  // A field that sizes a tensor twice: seq with seq_kv "same as seq" gives Lq x Lq scores, so the
  // most is sqrt(2^50) = 33554432, not 2^50 / seq.
  s = {};
  s.heads = 1;
  s.head_dim = 1;
  s.seq_q = 1000000000;
  expectError(s, "seq", {"scores tensor", "at most 33554432"});
  s.seq_q = 33554433;
  expectError(s, "seq", {"at most 33554432"});
  s.seq_q = 33554432;
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  // A layer at a fixed width: w_qkv is 3 E^2 whatever the heads, so the width must shrink.
  s = {};
  s.kind = WorkloadKind::layer;
  s.width = 67108864;
  s.heads = 262144;
  s.seq_q = 1;
  expectError(s, "width", {"w_qkv tensor", "with heads 262144 it can be at most 19136512"});  // 2^18 x 73
  s.width = 19136512;  // 3 x width^2 < 2^50 <= 3 x (2^18 x 74)^2
  EXPECT_TRUE(validate(s).empty()) << describe(validate(s));
  s = {};
  s.heads = int64_t{1} << 40;  // 2^46 elements: valid (the memory guard refuses it, not validation)
  s.seq_q = 1;
  EXPECT_TRUE(validate(s).empty());
}

TEST(WorkloadSpec, WhitespaceIsRefusedInEveryField) {
  // One rule for every field: values are taken as written.
  for (const auto& [field, text] : std::vector<std::pair<std::string, std::string>>{
           {"heads", " 8"}, {"heads", "8 "}, {"mask", "dense: 0.5"}, {"mask", "window: 4"}, {"scale", " 0.5"},
           {"dtype", "fp32 "}, {"seed", "\t1"}}) {
    WorkloadSpec s;
    auto e = setField(s, field, text);
    ASSERT_TRUE(e) << field << "='" << text << "' was accepted";
    EXPECT_NE(e->message.find("whitespace"), std::string::npos) << e->message;
  }
  WorkloadSpec s;
  EXPECT_FALSE(setField(s, "mask", "dense:0.5"));
  EXPECT_FALSE(setField(s, "scale", "0.5"));
}

TEST(WorkloadSpec, ParsesFieldsAndRefusesBadText) {
  WorkloadSpec s;
  EXPECT_FALSE(setField(s, "dtype", "bf16"));
  EXPECT_EQ(s.dtype, DType::bf16);
  auto e = setField(s, "dtype", "fp8");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "dtype");
  EXPECT_NE(e->message.find("fp32, fp16, bf16"), std::string::npos);
  e = setField(s, "mask", "sliding:3");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("window:W"), std::string::npos);
  e = setField(s, "mask", "window:x");
  ASSERT_TRUE(e);
  e = setField(s, "mask", "dense:2");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("(0, 1]"), std::string::npos);
  EXPECT_FALSE(setField(s, "mask", "dense:0.25"));
  EXPECT_EQ(s.mask.kind, MaskKind::dense);
  EXPECT_DOUBLE_EQ(s.mask.keep_prob, 0.25);
  EXPECT_TRUE(setField(s, "heads", "4.5"));
  EXPECT_TRUE(setField(s, "mask_layout", "diagonal"));
  EXPECT_TRUE(setField(s, "colour", "red"));
}

TEST(WorkloadSpec, WidthDerivesHeadDim) {
  WorkloadSpec s;
  s.width = 64;
  s.heads = 16;
  EXPECT_EQ(s.headDim(), 4);
  s.heads = 8;
  EXPECT_EQ(s.headDim(), 8);
  EXPECT_TRUE(validate(s).empty());
}

TEST(WorkloadSpec, JsonRoundTrip) {
  WorkloadSpec s;
  s.batch = 2;
  s.heads = 12;
  s.kv_heads = 4;
  s.seq_q = 97;
  s.seq_kv = 1025;
  s.head_dim = 59;
  s.dtype = DType::fp16;
  s.mask = {MaskKind::dense, 0, 0.375};
  s.mask_layout = MaskLayout::per_head;
  s.scale = 0.125;
  s.seed = 42;
  EXPECT_EQ(workloadSpecFromJson(toJson(s)), s);
  WorkloadSpec w;
  w.width = 64;
  w.heads = 16;
  w.mask = {MaskKind::window, 7, 1.0};
  EXPECT_EQ(workloadSpecFromJson(nlohmann::json::parse(toJson(w).dump())), w);
  EXPECT_THROW(workloadSpecFromJson(nlohmann::json{{"dtype", "fp64"}}), std::runtime_error);
}

TEST(Dtype, HalfAndBf16RoundTripAndRounding) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(halfToFloat(floatToHalf(f)), f) << f;
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_EQ(halfToFloat(floatToHalf(1e6f)), INFINITY);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f)), 1.0f);
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.00390625f)), 1.0f);  // 1 + 2^-8: tie, rounds to even
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.01171875f)), 1.015625f);  // 1 + 3*2^-8 rounds up
  EXPECT_NEAR(roundTo(DType::fp16, 0.1f), 0.1f, 1e-4);
}

TEST(Mask, SemanticsMatchTheDefinitions) {
  // causal, bottom-right aligned: Lq=2, Lkv=4 -> off = 2.
  MaskSpec causal{MaskKind::causal, 0, 1.0};
  EXPECT_TRUE(maskAllows(causal, 0, 2, 2, 4));
  EXPECT_FALSE(maskAllows(causal, 0, 3, 2, 4));
  EXPECT_TRUE(maskAllows(causal, 1, 3, 2, 4));
  // Lq > Lkv: the first queries see nothing.
  EXPECT_EQ(visibleKeys(causal, 0, 4, 2).end, 0);
  EXPECT_EQ(visibleKeys(causal, 2, 4, 2).end, 1);
  MaskSpec window{MaskKind::window, 3, 1.0};
  KeyRange r = visibleKeys(window, 5, 8, 8);
  EXPECT_EQ(r.begin, 3);
  EXPECT_EQ(r.end, 6);
  MaskSpec block{MaskKind::block, 4, 1.0};
  EXPECT_TRUE(maskAllows(block, 5, 4, 10, 10));
  EXPECT_FALSE(maskAllows(block, 5, 3, 10, 10));
  KeyRange last = visibleKeys(block, 9, 10, 10);
  EXPECT_EQ(last.begin, 8);
  EXPECT_EQ(last.end, 10);
}

TEST(Mask, DenseMaskIsSeededAndLayoutAware) {
  WorkloadSpec s;
  s.batch = 2;
  s.heads = 3;
  s.seq_q = 17;
  s.seq_kv = 33;
  s.mask = {MaskKind::dense, 0, 0.5};
  auto m1 = makeDenseMask(s);
  EXPECT_EQ(m1.size(), 17u * 33u);
  EXPECT_EQ(m1, makeDenseMask(s));
  size_t ones = std::count(m1.begin(), m1.end(), 1);
  EXPECT_GT(ones, m1.size() / 4);
  EXPECT_LT(ones, 3 * m1.size() / 4);
  s.mask_layout = MaskLayout::per_head;
  auto m2 = makeDenseMask(s);
  EXPECT_EQ(static_cast<int64_t>(m2.size()), 2 * 3 * 17 * 33);
  EXPECT_NE(std::vector<uint8_t>(m2.begin(), m2.begin() + 17 * 33),
            std::vector<uint8_t>(m2.begin() + 17 * 33, m2.begin() + 2 * 17 * 33));
  s.mask.keep_prob = 1.0;
  auto all = makeDenseMask(s);
  EXPECT_EQ(static_cast<size_t>(std::count(all.begin(), all.end(), 1)), all.size());
}

TEST(Mask, FlopsCountComputedPairs) {
  WorkloadSpec s;
  s.batch = 1;
  s.heads = 2;
  s.seq_q = 8;
  s.head_dim = 4;
  EXPECT_DOUBLE_EQ(forwardFlops(s), 4.0 * 2 * 64 * 4);
  s.mask = {MaskKind::causal, 0, 1.0};
  EXPECT_DOUBLE_EQ(forwardFlops(s), 4.0 * 2 * 32 * 4);
  s.mask = {MaskKind::block, 4, 1.0};
  EXPECT_DOUBLE_EQ(computedPairsPerHead(s), 32);
  s.mask = {MaskKind::window, 2, 1.0};
  EXPECT_DOUBLE_EQ(computedPairsPerHead(s), 15);  // 1 + 7 * 2
}
