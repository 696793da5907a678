// kind = layer inputs (the layer contract in docs/ARCHITECTURE.md): shapes, bounds, streams, G,
// and validate()'s self-attention rule.
#include <gtest/gtest.h>

#include <cmath>

#include "core/inputs/host_inputs.h"
#include "core/base/random.h"
#include "core/spec/workload_spec.h"

using namespace attnscope;

namespace {

WorkloadSpec layerSpec() {
  WorkloadSpec s;
  s.kind = WorkloadKind::layer;
  s.batch = 2;
  s.heads = 4;
  s.kv_heads = 2;
  s.seq_q = 5;
  s.head_dim = 3;
  s.seed = 11;
  return s;
}

double maxAbs(const HostTensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.elements(); ++i) m = std::max(m, std::fabs(static_cast<double>(t.at(i))));
  return m;
}

}  // namespace

TEST(LayerInputs, ShapesFollowTheContract) {
  const WorkloadSpec s = layerSpec();
  ASSERT_TRUE(validate(s).empty()) << describe(validate(s));
  EXPECT_EQ(layerWidth(s), 12);
  EXPECT_EQ(layerQkvRows(s), (4 + 2 * 2) * 3);
  const HostInputs in = HostInputs::generate(s);
  EXPECT_EQ(in.x.shape, (std::vector<int64_t>{2, 5, 12}));
  EXPECT_EQ(in.w_qkv.shape, (std::vector<int64_t>{24, 12}));
  EXPECT_EQ(in.b_qkv.shape, (std::vector<int64_t>{24}));
  EXPECT_EQ(in.w_o.shape, (std::vector<int64_t>{12, 12}));
  EXPECT_EQ(in.b_o.shape, (std::vector<int64_t>{12}));
  EXPECT_TRUE(in.q.bytes.empty());  // the layer computes q, k, v itself
  EXPECT_TRUE(in.k.bytes.empty());
  EXPECT_TRUE(in.v.bytes.empty());
  EXPECT_TRUE(in.g.bytes.empty());  // forward: no G
  for (const HostTensor* t : {&in.q, &in.k, &in.v, &in.g}) EXPECT_EQ(t->elements(), 0);  // no tensor, not a scalar
  for (const HostTensor* t : {&in.x, &in.w_qkv, &in.b_qkv, &in.w_o, &in.b_o}) EXPECT_EQ(t->dtype, DType::fp32);
}

TEST(LayerInputs, WidthSetsE) {
  WorkloadSpec s = layerSpec();
  s.width = 16;  // head_dim = 16 / 4 = 4
  s.kv_heads = 0;
  const HostInputs in = HostInputs::generate(s);
  EXPECT_EQ(in.x.shape, (std::vector<int64_t>{2, 5, 16}));
  EXPECT_EQ(in.w_qkv.shape, (std::vector<int64_t>{48, 16}));
  EXPECT_EQ(in.w_o.shape, (std::vector<int64_t>{16, 16}));
}

TEST(LayerInputs, ValuesAreDrawnPerStreamWithinTheirBounds) {
  const WorkloadSpec s = layerSpec();
  const HostInputs in = HostInputs::generate(s);
  const double e = 12.0;
  EXPECT_LE(maxAbs(in.x), 1.0);
  EXPECT_GT(maxAbs(in.x), 0.5);
  EXPECT_LE(maxAbs(in.w_qkv), 1.0 / std::sqrt(e));
  EXPECT_GT(maxAbs(in.w_qkv), 0.5 / std::sqrt(e));
  EXPECT_LE(maxAbs(in.b_qkv), 1.0 / std::sqrt(e));
  EXPECT_LE(maxAbs(in.w_o), 1.0 / std::sqrt(12.0));
  EXPECT_LE(maxAbs(in.b_o), 1.0 / std::sqrt(12.0));
  // Element i of each tensor is element i of its own stream, scaled to its bound.
  EXPECT_FLOAT_EQ(in.x.at(7), static_cast<float>(2.0 * uniform01(s.seed, RandomStream::x, 7) - 1.0));
  EXPECT_FLOAT_EQ(in.w_qkv.at(9),
                  static_cast<float>((2.0 * uniform01(s.seed, RandomStream::w_qkv, 9) - 1.0) / std::sqrt(e)));
  EXPECT_FLOAT_EQ(in.b_o.at(3),
                  static_cast<float>((2.0 * uniform01(s.seed, RandomStream::b_o, 3) - 1.0) / std::sqrt(12.0)));
  // The same seed draws the same inputs; another seed others.
  EXPECT_EQ(HostInputs::generate(s).w_o.bytes, in.w_o.bytes);
  WorkloadSpec t = s;
  t.seed = 12;
  EXPECT_NE(HostInputs::generate(t).x.bytes, in.x.bytes);
}

TEST(LayerInputs, TrainDrawsGOverTheOutput) {
  WorkloadSpec s = layerSpec();
  s.pass = Pass::train;
  s.dtype = DType::bf16;
  const HostInputs in = HostInputs::generate(s);
  EXPECT_EQ(in.g.shape, (std::vector<int64_t>{2, 5, 12}));
  EXPECT_EQ(in.g.dtype, DType::bf16);
  EXPECT_EQ(in.x.dtype, DType::bf16);
  EXPECT_EQ(in.g.at(4), bf16ToFloat(floatToBf16(static_cast<float>(
                            2.0 * uniform01(s.seed, RandomStream::grad_out, 4) - 1.0))));
}

TEST(LayerInputs, DenseMaskIsKept) {
  WorkloadSpec s = layerSpec();
  s.mask.kind = MaskKind::dense;
  s.mask.keep_prob = 0.5;
  const HostInputs in = HostInputs::generate(s);
  EXPECT_EQ(static_cast<int64_t>(in.mask.size()), s.maskBytes());
}

TEST(LayerInputs, ValidateRefusesCrossAttention) {
  WorkloadSpec s = layerSpec();
  s.seq_kv = 7;
  const auto errs = validate(s);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "seq_kv");
  EXPECT_NE(errs[0].message.find("self-attention"), std::string::npos) << errs[0].message;
  s.seq_kv = 5;  // equal is allowed, as is 0
  EXPECT_TRUE(validate(s).empty());
  s.kind = WorkloadKind::attention;  // attention may cross-attend
  s.seq_kv = 7;
  EXPECT_TRUE(validate(s).empty());
}

TEST(LayerInputs, ValidateBoundsTheWeights) {
  WorkloadSpec s = layerSpec();
  s.batch = 1;
  s.seq_q = 1;
  s.heads = int64_t{1} << 20;
  s.kv_heads = 0;
  s.head_dim = 256;
  const auto errs = validate(s);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("w_qkv"), std::string::npos) << errs[0].message;
  s.kind = WorkloadKind::attention;
  EXPECT_TRUE(validate(s).empty());
}
