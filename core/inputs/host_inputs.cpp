#include "core/inputs/host_inputs.h"

#include <cmath>
#include <cstring>

#include "core/base/cancel.h"
#include "core/spec/mask.h"
#include "core/base/random.h"

namespace attnscope {

int64_t HostTensor::elements() const {
  // No shape is no tensor (a layer's q, k, v; a forward pass's g), not a scalar: code that walks
  // elements() must not read one value from empty bytes.
  if (shape.empty()) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

float HostTensor::at(int64_t i) const {
  switch (dtype) {
    case DType::fp32: {
      float f;
      std::memcpy(&f, bytes.data() + i * 4, 4);
      return f;
    }
    case DType::fp16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + i * 2, 2);
      return halfToFloat(h);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, bytes.data() + i * 2, 2);
      return bf16ToFloat(h);
    }
  }
  return 0;
}

void HostTensor::set(int64_t i, float v) {
  switch (dtype) {
    case DType::fp32: std::memcpy(bytes.data() + i * 4, &v, 4); break;
    case DType::fp16: {
      uint16_t h = floatToHalf(v);
      std::memcpy(bytes.data() + i * 2, &h, 2);
      break;
    }
    case DType::bf16: {
      uint16_t h = floatToBf16(v);
      std::memcpy(bytes.data() + i * 2, &h, 2);
      break;
    }
  }
}

HostTensor HostTensor::zeros(DType d, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = d;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<size_t>(t.elements() * bytesPerElement(d)), 0);
  return t;
}

namespace {
// Uniform in [-bound, bound), rounded to the dtype.
HostTensor randomTensor(const WorkloadSpec& s, RandomStream stream, std::vector<int64_t> shape,
                        const std::atomic<bool>* cancel, double bound = 1.0) {
  HostTensor t = HostTensor::zeros(s.dtype, std::move(shape));
  const int64_t n = t.elements();
  for (int64_t i = 0; i < n; ++i) {
    // Large inputs take seconds to draw; Ctrl-C must not wait for them.
    if ((i & 0xfffff) == 0 && cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
    t.set(i, static_cast<float>(bound * (2.0 * uniform01(s.seed, stream, static_cast<uint64_t>(i)) - 1.0)));
  }
  return t;
}

void addMask(const WorkloadSpec& s, HostInputs& in) {
  if (s.mask.kind == MaskKind::dense) in.mask = makeDenseMask(s);
  if (s.mask.kind != MaskKind::additive) return;
  in.additive_mask = HostTensor::zeros(s.maskDType(), additiveMaskShape(s));
  const std::vector<float> values = makeAdditiveMask(s);
  for (size_t i = 0; i < values.size(); ++i) in.additive_mask.set(static_cast<int64_t>(i), values[i]);
}
}  // namespace

uint64_t layerWeightSeed(uint64_t seed, int64_t layer) {
  return layer == 0 ? seed : splitmix64(seed ^ (0x6c61796572ull + static_cast<uint64_t>(layer) * 0x9e3779b97f4a7c15ull));
}

HostInputs::WeightsOf HostInputs::weights(int64_t layer) const {
  if (layer == 0) return {&w_qkv, &b_qkv, &w_o, &b_o};
  const LayerWeights& w = deeper.at(static_cast<size_t>(layer - 1));
  return {&w.w_qkv, &w.b_qkv, &w.w_o, &w.b_o};
}

HostInputs HostInputs::generate(const WorkloadSpec& s, const std::atomic<bool>* cancel) {
  HostInputs in;
  const int64_t d = s.headDim();
  if (s.kind == WorkloadKind::layer) {
    const int64_t e = layerWidth(s), rows = layerQkvRows(s), hd = s.heads * d;
    const double in_bound = 1.0 / std::sqrt(static_cast<double>(e));
    const double out_bound = 1.0 / std::sqrt(static_cast<double>(hd));
    in.x = randomTensor(s, RandomStream::x, {s.batch, s.seq_q, e}, cancel);
    in.w_qkv = randomTensor(s, RandomStream::w_qkv, {rows, e}, cancel, in_bound);
    in.b_qkv = randomTensor(s, RandomStream::b_qkv, {rows}, cancel, in_bound);
    in.w_o = randomTensor(s, RandomStream::w_o, {e, hd}, cancel, out_bound);
    in.b_o = randomTensor(s, RandomStream::b_o, {e}, cancel, out_bound);
    for (int64_t l = 1; l < s.layers; ++l) {
      WorkloadSpec deeper = s;
      deeper.seed = layerWeightSeed(s.seed, l);
      in.deeper.push_back({randomTensor(deeper, RandomStream::w_qkv, {rows, e}, cancel, in_bound),
                           randomTensor(deeper, RandomStream::b_qkv, {rows}, cancel, in_bound),
                           randomTensor(deeper, RandomStream::w_o, {e, hd}, cancel, out_bound),
                           randomTensor(deeper, RandomStream::b_o, {e}, cancel, out_bound)});
    }
    addMask(s, in);
    if (s.pass == Pass::train) in.g = randomTensor(s, RandomStream::grad_out, {s.batch, s.seq_q, e}, cancel);
    return in;
  }
  in.q = randomTensor(s, RandomStream::q, {s.batch, s.heads, s.seq_q, d}, cancel);
  in.k = randomTensor(s, RandomStream::k, {s.batch, s.kvHeads(), s.seqKv(), d}, cancel);
  in.v = randomTensor(s, RandomStream::v, {s.batch, s.kvHeads(), s.seqKv(), d}, cancel);
  addMask(s, in);
  if (s.pass == Pass::train) in.g = randomTensor(s, RandomStream::grad_out, {s.batch, s.heads, s.seq_q, d}, cancel);
  return in;
}

}  // namespace attnscope
