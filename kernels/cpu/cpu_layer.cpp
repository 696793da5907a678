#include "kernels/cpu/cpu_layer.h"

#include <chrono>
#include <stdexcept>

#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/layer_products.h"

namespace attnscope::cpu {
namespace {

// The sizes of a layer: R = B x L rows, width E, Ht D fused projection rows, H D merged heads.
struct Dims {
  int64_t rows, e, qkv, hd;
  static Dims of(const WorkloadSpec& s) { return {s.batch * s.seq_q, layerWidth(s), layerQkvRows(s), s.heads * s.headDim()}; }
};

// Every tensor that lives as long as the execution, in allocation order: name, elements, role.
struct Whole {
  const char* name;
  int64_t elements;
  BufferRole role;
};
std::vector<Whole> wholeRunTensors(const WorkloadSpec& s) {
  const Dims d = Dims::of(s);
  const bool train = s.pass == Pass::train;
  std::vector<Whole> w{{"x", d.rows * d.e, BufferRole::input},   {"w_qkv", d.qkv * d.e, BufferRole::input},
                       {"b_qkv", d.qkv, BufferRole::input},      {"w_o", d.e * d.hd, BufferRole::input},
                       {"b_o", d.e, BufferRole::input},          {"y", d.rows * d.e, BufferRole::output}};
  if (train)
    for (const Whole& t : {Whole{"g", d.rows * d.e, BufferRole::input}, Whole{"dx", d.rows * d.e, BufferRole::output},
                           Whole{"dw_qkv", d.qkv * d.e, BufferRole::output}, Whole{"db_qkv", d.qkv, BufferRole::output},
                           Whole{"dw_o", d.e * d.hd, BufferRole::output}, Whole{"db_o", d.e, BufferRole::output}})
      w.push_back(t);
  for (const Whole& t : {Whole{"q", s.qElements(), BufferRole::workspace}, Whole{"k", s.kvElements(), BufferRole::workspace},
                         Whole{"v", s.kvElements(), BufferRole::workspace}, Whole{"o", s.qElements(), BufferRole::workspace}})
    w.push_back(t);
  if (train)
    for (const Whole& t : {Whole{"dO", s.qElements(), BufferRole::workspace}, Whole{"dq", s.qElements(), BufferRole::workspace},
                           Whole{"dk", s.kvElements(), BufferRole::workspace}, Whole{"dv", s.kvElements(), BufferRole::workspace}})
      w.push_back(t);
  return w;
}

HostTensor hostCopy(DType dtype, const Buffer<uint8_t>& b, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(b.data(), b.data() + b.bytes());
  return t;
}

class LayerExecution final : public Execution {
 public:
  LayerExecution(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec, const HostInputs& in,
                 RunContext& ctx);

  double run() override;
  void output(std::vector<float>& out) override {
    out.resize(static_cast<size_t>(y_.bytes() / bytesPerElement(s_.dtype)));
    toFloat(s_.dtype, y_.data(), 0, static_cast<int64_t>(out.size()), out.data());
  }
  bool layerGradients(LayerGradients& out) override;
  bool layerIntermediates(LayerIntermediates& out) override;

 private:
  RowMatrix split(std::initializer_list<std::pair<Buffer<uint8_t>*, int64_t>> heads) const {
    RowMatrix m;
    m.dtype = s_.dtype;
    m.rows_per_batch = s_.seq_q;
    for (const auto& [b, h] : heads) m.parts.push_back({b->data(), h, s_.headDim()});
    return m;
  }
  RowMatrix plain(const Buffer<uint8_t>& b, int64_t cols) const {
    return RowMatrix::plain(s_.dtype, b.data(), d_.rows, cols);
  }
  void backward();

  const WorkloadSpec s_;
  const Dims d_;
  RunContext& ctx_;
  TaskPool& pool_;
  Buffer<uint8_t> x_, w_qkv_, b_qkv_, w_o_, b_o_, y_;
  Buffer<uint8_t> g_, dx_, dw_qkv_, db_qkv_, dw_o_, db_o_;  // pass = train
  RunTensors t_;  // the attention's: q, k, v, mask, o, and for train g (named dO), dq, dk, dv
  std::unique_ptr<AttentionCore> core_;
};

LayerExecution::LayerExecution(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec,
                               const HostInputs& in, RunContext& ctx)
    : s_(spec), d_(Dims::of(spec)), ctx_(ctx), pool_(pool) {
  const DType dt = spec.dtype;
  const int64_t elem = bytesPerElement(dt);
  checkInputTensor("x", in.x, dt, d_.rows * d_.e);
  checkInputTensor("w_qkv", in.w_qkv, dt, d_.qkv * d_.e);
  checkInputTensor("b_qkv", in.b_qkv, dt, d_.qkv);
  checkInputTensor("w_o", in.w_o, dt, d_.e * d_.hd);
  checkInputTensor("b_o", in.b_o, dt, d_.e);
  checkMaskInput(spec, in);
  const bool train = spec.pass == Pass::train;
  if (train) {
    if (in.g.bytes.empty()) throw std::invalid_argument("a train pass needs the output gradient g in the inputs");
    checkInputTensor("g", in.g, dt, d_.rows * d_.e);
  }
  auto fresh = [&](const char* name, int64_t elements) { return Buffer<uint8_t>(ctx.allocator(), elements * elem, name); };
  // The order of wholeRunTensors.
  x_ = copyToBuffer(ctx, in.x.bytes, "x");
  w_qkv_ = copyToBuffer(ctx, in.w_qkv.bytes, "w_qkv");
  b_qkv_ = copyToBuffer(ctx, in.b_qkv.bytes, "b_qkv");
  w_o_ = copyToBuffer(ctx, in.w_o.bytes, "w_o");
  b_o_ = copyToBuffer(ctx, in.b_o.bytes, "b_o");
  y_ = fresh("y", d_.rows * d_.e);
  if (train) {
    g_ = copyToBuffer(ctx, in.g.bytes, "g");
    dx_ = fresh("dx", d_.rows * d_.e);
    dw_qkv_ = fresh("dw_qkv", d_.qkv * d_.e);
    db_qkv_ = fresh("db_qkv", d_.qkv);
    dw_o_ = fresh("dw_o", d_.e * d_.hd);
    db_o_ = fresh("db_o", d_.e);
  }
  t_.q = fresh("q", spec.qElements());
  t_.k = fresh("k", spec.kvElements());
  t_.v = fresh("v", spec.kvElements());
  t_.o = fresh("o", spec.qElements());
  if (train) {
    t_.g = fresh("dO", spec.qElements());
    t_.dq = fresh("dq", spec.qElements());
    t_.dk = fresh("dk", spec.kvElements());
    t_.dv = fresh("dv", spec.kvElements());
  }
  t_.mask = copyMask(ctx, spec, in);
  core_ = backend.makeCore(s_, t_, ctx);
}

double LayerExecution::run() {
  const auto start = std::chrono::steady_clock::now();
  const int64_t H = s_.heads, Hkv = s_.kvHeads();
  {
    PhaseScope phase(ctx_, "qkv_proj");
    const RowMatrix x = plain(x_, d_.e), qkv = split({{&t_.q, H}, {&t_.k, Hkv}, {&t_.v, Hkv}});
    runRowProduct({&x, w_qkv_.data(), true, b_qkv_.data(), &qkv, d_.e, d_.qkv, "w_qkv^T", "qkv_proj"}, d_.rows, ctx_,
                  pool_);
  }
  core_->forward();
  {
    PhaseScope phase(ctx_, "out_proj");
    const RowMatrix o = split({{&t_.o, H}}), y = plain(y_, d_.e);
    runRowProduct({&o, w_o_.data(), true, b_o_.data(), &y, d_.hd, d_.e, "w_o^T", "out_proj"}, d_.rows, ctx_, pool_);
  }
  if (s_.pass == Pass::train) backward();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void LayerExecution::backward() {
  const int64_t H = s_.heads, Hkv = s_.kvHeads();
  const RowMatrix g = plain(g_, d_.e), o = split({{&t_.o, H}}), d_o = split({{&t_.g, H}});
  {
    PhaseScope phase(ctx_, "out_proj_backward");
    {
      PhaseScope part(ctx_, "dO");
      runRowProduct({&g, w_o_.data(), false, nullptr, &d_o, d_.e, d_.hd, "w_o", "out_proj_backward dO"}, d_.rows,
                    ctx_, pool_);
    }
    PhaseScope part(ctx_, "dw_o");
    runWeightGradient({&g, &o, dw_o_.data(), db_o_.data(), s_.dtype, "out_proj_backward dw_o sums"}, d_.rows, ctx_,
                      pool_);
  }
  core_->backward();
  {
    PhaseScope phase(ctx_, "qkv_proj_backward");
    const RowMatrix dqkv = split({{&t_.dq, H}, {&t_.dk, Hkv}, {&t_.dv, Hkv}}), x = plain(x_, d_.e),
                    dx = plain(dx_, d_.e);
    {
      PhaseScope part(ctx_, "dx");
      runRowProduct({&dqkv, w_qkv_.data(), false, nullptr, &dx, d_.qkv, d_.e, "w_qkv", "qkv_proj_backward dx"},
                    d_.rows, ctx_, pool_);
    }
    PhaseScope part(ctx_, "dw_qkv");
    runWeightGradient({&dqkv, &x, dw_qkv_.data(), db_qkv_.data(), s_.dtype, "qkv_proj_backward dw_qkv sums"},
                      d_.rows, ctx_, pool_);
  }
}

bool LayerExecution::layerGradients(LayerGradients& out) {
  if (s_.pass != Pass::train) return false;
  auto asFloat = [&](const Buffer<uint8_t>& b, std::vector<float>& v) {
    v.resize(static_cast<size_t>(b.bytes() / bytesPerElement(s_.dtype)));
    toFloat(s_.dtype, b.data(), 0, static_cast<int64_t>(v.size()), v.data());
  };
  asFloat(dx_, out.dx);
  asFloat(dw_qkv_, out.dw_qkv);
  asFloat(db_qkv_, out.db_qkv);
  asFloat(dw_o_, out.dw_o);
  asFloat(db_o_, out.db_o);
  return true;
}

bool LayerExecution::layerIntermediates(LayerIntermediates& out) {
  const int64_t B = s_.batch, H = s_.heads, Hkv = s_.kvHeads(), L = s_.seq_q, D = s_.headDim();
  out.q = hostCopy(s_.dtype, t_.q, {B, H, L, D});
  out.k = hostCopy(s_.dtype, t_.k, {B, Hkv, L, D});
  out.v = hostCopy(s_.dtype, t_.v, {B, Hkv, L, D});
  out.o = hostCopy(s_.dtype, t_.o, {B, H, L, D});
  if (s_.pass == Pass::train) {
    out.d_o = hostCopy(s_.dtype, t_.g, {B, H, L, D});
    out.dq = hostCopy(s_.dtype, t_.dq, {B, H, L, D});
    out.dk = hostCopy(s_.dtype, t_.dk, {B, Hkv, L, D});
    out.dv = hostCopy(s_.dtype, t_.dv, {B, Hkv, L, D});
  }
  return true;
}

}  // namespace

MemoryPlan planLayer(const CpuBackend& backend, const WorkloadSpec& spec) {
  const Dims d = Dims::of(spec);
  const int threads = backend.threads();
  const int64_t elem = bytesPerElement(spec.dtype);
  MemoryPlan p;
  p.addStep("inputs");
  PlanTails tails;
  for (const Whole& t : wholeRunTensors(spec)) {
    tails.to_run_end.push_back(p.buffers.size());
    p.add(t.name, t.elements * elem, 0, 0, t.role);
  }
  if (maskIsTensor(spec.mask)) {
    tails.to_run_end.push_back(p.buffers.size());
    p.add("mask", spec.maskBytes(), 0, 0, BufferRole::mask);
  }
  planRowProduct(p, p.addStep("qkv_proj"), "qkv_proj", "w_qkv^T", d.rows, d.e, d.qkv, threads);
  backend.planCoreForward(p, spec, tails);
  planRowProduct(p, p.addStep("out_proj"), "out_proj", "w_o^T", d.rows, d.hd, d.e, threads);
  if (spec.pass == Pass::train) {
    planRowProduct(p, p.addStep("out_proj_backward dO"), "out_proj_backward dO", "w_o", d.rows, d.e, d.hd, threads);
    planWeightGradient(p, p.addStep("out_proj_backward dw_o"), "out_proj_backward dw_o sums", d.rows, d.e, d.hd,
                       threads);
    backend.planCoreBackward(p, spec, tails);
    planRowProduct(p, p.addStep("qkv_proj_backward dx"), "qkv_proj_backward dx", "w_qkv", d.rows, d.qkv, d.e, threads);
    planWeightGradient(p, p.addStep("qkv_proj_backward dw_qkv"), "qkv_proj_backward dw_qkv sums", d.rows, d.qkv, d.e,
                       threads);
  }
  PlanTails::close(p, tails.to_run_end);
  return p;
}

std::unique_ptr<Execution> prepareLayer(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec,
                                        const HostInputs& inputs, RunContext& ctx) {
  return std::make_unique<LayerExecution>(backend, pool, spec, inputs, ctx);
}

}  // namespace attnscope::cpu
