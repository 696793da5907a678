#include "kernels/cpu/cpu_layer.h"

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cpu/dtype_rows.h"
#include "kernels/cpu/layer_products.h"

namespace attnscope::cpu {
namespace {

// The sizes of a layer: R = B x L rows, width E, Ht D fused projection rows, H D merged heads.
struct Dims {
  int64_t rows, e, qkv, hd;
  static Dims of(const WorkloadSpec& s) { return {s.batch * s.seq_q, layerWidth(s), layerQkvRows(s), s.heads * s.headDim()}; }
};

// A stack's names: layer l (0-based) of a stack of more than one layer prefixes its buffers
// "L<l + 1>." and its steps "L<l + 1> "; a single layer's are bare, as before stacks existed.
std::string bufferPrefix(const WorkloadSpec& s, int64_t l) { return s.layers > 1 ? "L" + std::to_string(l + 1) + "." : ""; }
std::string stepPrefix(const WorkloadSpec& s, int64_t l) { return s.layers > 1 ? "L" + std::to_string(l + 1) + " " : ""; }

// The spec each layer's attention core sees: recomputing is the layer's business (checkpoint =
// attention reruns the core's forward once the out projection's backward is done, before dq, dk, dv
// exist, as autograd reaches a checkpointed SDPA; checkpoint = layer reruns the whole layer), so
// the core runs as without checkpointing.
WorkloadSpec coreSpec(const WorkloadSpec& s) {
  WorkloadSpec c = s;
  c.checkpoint = Checkpoint::none;
  c.layers = 1;
  return c;
}

// Whether the forward frees a layer's q, k, v, o once the layer is done: always in a forward pass,
// and under checkpoint = layer (the backward recomputes them).
bool forwardFrees(const WorkloadSpec& s) { return s.pass != Pass::train || s.checkpoint == Checkpoint::layer; }

HostTensor hostCopy(DType dtype, const Buffer<uint8_t>& b, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(b.data(), b.data() + b.bytes());
  return t;
}

// One layer of the stack: its weights (and their gradients) for the whole execution; its
// activations while they are live; its output y (layers before the last) and the gradient of its
// input dx (layers after the first) while the next layer, or the previous one's backward, reads them.
struct LayerState {
  Buffer<uint8_t> w_qkv, b_qkv, w_o, b_o;
  Buffer<uint8_t> dw_qkv, db_qkv, dw_o, db_o;  // pass = train
  Buffer<uint8_t> q, k, v, o, d_o, dq, dk, dv;
  Buffer<uint8_t> y, dx;
  std::unique_ptr<AttentionCore> core;
  LayerIntermediates mid;  // copied in the first run when the check asks (RunContext::keepIntermediates)
  std::vector<float> dx_copy;  // layers after the first: dx as float, copied in the first run
};

// The cores of all layers see one RunTensors (the mask lives there); a layer's activations are
// moved into it while the layer computes, and back out after.
class Bound {
 public:
  Bound(RunTensors& t, LayerState& l) : t_(t), l_(l) { swapAll(); }
  ~Bound() { swapAll(); }
  Bound(const Bound&) = delete;
  Bound& operator=(const Bound&) = delete;

 private:
  void swapAll() {
    std::swap(t_.q, l_.q);
    std::swap(t_.k, l_.k);
    std::swap(t_.v, l_.v);
    std::swap(t_.o, l_.o);
    std::swap(t_.g, l_.d_o);
    std::swap(t_.dq, l_.dq);
    std::swap(t_.dk, l_.dk);
    std::swap(t_.dv, l_.dv);
  }
  RunTensors& t_;
  LayerState& l_;
};

class LayerExecution final : public Execution {
 public:
  LayerExecution(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec, const HostInputs& in,
                 RunContext& ctx);

  double run() override;
  void output(std::vector<float>& out) override {
    out.resize(static_cast<size_t>(y_.bytes() / bytesPerElement(s_.dtype)));
    toFloat(s_.dtype, y_.data(), 0, static_cast<int64_t>(out.size()), out.data());
  }
  bool layerGradients(std::vector<LayerGradients>& out) override;
  bool layerIntermediates(std::vector<LayerIntermediates>& out) override;

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
  Buffer<uint8_t> fresh(const char* name, int64_t elements) {
    return Buffer<uint8_t>(ctx_.allocator(), elements * bytesPerElement(s_.dtype), name);
  }
  int64_t last() const { return s_.layers - 1; }
  Buffer<uint8_t>& input(int64_t l) { return l == 0 ? x_ : layers_[static_cast<size_t>(l - 1)].y; }
  Buffer<uint8_t>& outputOf(int64_t l) { return l == last() ? y_ : layers_[static_cast<size_t>(l)].y; }
  Buffer<uint8_t>& gradientIn(int64_t l) { return l == last() ? g_ : layers_[static_cast<size_t>(l + 1)].dx; }
  Buffer<uint8_t>& gradientOut(int64_t l) { return l == 0 ? dx_ : layers_[static_cast<size_t>(l)].dx; }
  void project(int64_t l);
  void attend(int64_t l, bool keep);
  void forwardLayer(int64_t l);
  void backwardLayer(int64_t l);
  void copyActivations(LayerState& L);
  void copyGradients(LayerState& L);

  const WorkloadSpec s_;
  const WorkloadSpec core_spec_;
  const Dims d_;
  RunContext& ctx_;
  TaskPool& pool_;
  Buffer<uint8_t> x_, y_, g_, dx_;
  std::vector<LayerState> layers_;
  RunTensors t_;  // what the cores see: the mask, and the computing layer's activations
  bool capture_ = false;  // this run copies the intermediates out
  bool captured_ = false;
};

LayerExecution::LayerExecution(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec,
                               const HostInputs& in, RunContext& ctx)
    : s_(spec), core_spec_(coreSpec(spec)), d_(Dims::of(spec)), ctx_(ctx), pool_(pool) {
  const DType dt = spec.dtype;
  const bool train = spec.pass == Pass::train;
  checkInputTensor("x", in.x, dt, d_.rows * d_.e);
  if (static_cast<int64_t>(in.deeper.size()) != spec.layers - 1)
    throw std::invalid_argument("a stack of " + std::to_string(spec.layers) + " layers needs the weights of " +
                                std::to_string(spec.layers - 1) + " deeper layers in the inputs (got " +
                                std::to_string(in.deeper.size()) + ")");
  for (int64_t l = 0; l < spec.layers; ++l) {
    const HostInputs::WeightsOf w = in.weights(l);
    const std::string at = spec.layers > 1 ? " of layer " + std::to_string(l + 1) : "";
    checkInputTensor(("w_qkv" + at).c_str(), *w.w_qkv, dt, d_.qkv * d_.e);
    checkInputTensor(("b_qkv" + at).c_str(), *w.b_qkv, dt, d_.qkv);
    checkInputTensor(("w_o" + at).c_str(), *w.w_o, dt, d_.e * d_.hd);
    checkInputTensor(("b_o" + at).c_str(), *w.b_o, dt, d_.e);
  }
  checkMaskInput(spec, in);
  if (train) {
    if (in.g.bytes.empty()) throw std::invalid_argument("a train pass needs the output gradient g in the inputs");
    checkInputTensor("g", in.g, dt, d_.rows * d_.e);
  }
  // The order of planLayer's whole-run buffers.
  x_ = copyToBuffer(ctx, in.x.bytes, "x");
  layers_.resize(static_cast<size_t>(spec.layers));
  for (int64_t l = 0; l < spec.layers; ++l) {
    TagPrefixScope prefix(ctx.allocator(), bufferPrefix(spec, l));
    const HostInputs::WeightsOf w = in.weights(l);
    LayerState& L = layers_[static_cast<size_t>(l)];
    L.w_qkv = copyToBuffer(ctx, w.w_qkv->bytes, "w_qkv");
    L.b_qkv = copyToBuffer(ctx, w.b_qkv->bytes, "b_qkv");
    L.w_o = copyToBuffer(ctx, w.w_o->bytes, "w_o");
    L.b_o = copyToBuffer(ctx, w.b_o->bytes, "b_o");
  }
  y_ = fresh("y", d_.rows * d_.e);
  if (train) {
    g_ = copyToBuffer(ctx, in.g.bytes, "g");
    dx_ = fresh("dx", d_.rows * d_.e);
    for (int64_t l = 0; l < spec.layers; ++l) {
      TagPrefixScope prefix(ctx.allocator(), bufferPrefix(spec, l));
      LayerState& L = layers_[static_cast<size_t>(l)];
      L.dw_qkv = fresh("dw_qkv", d_.qkv * d_.e);
      L.db_qkv = fresh("db_qkv", d_.qkv);
      L.dw_o = fresh("dw_o", d_.e * d_.hd);
      L.db_o = fresh("db_o", d_.e);
    }
  }
  t_.mask = copyMask(ctx, spec, in);
  for (int64_t l = 0; l < spec.layers; ++l) {
    TagPrefixScope prefix(ctx.allocator(), bufferPrefix(spec, l));
    layers_[static_cast<size_t>(l)].core = backend.makeCore(core_spec_, t_, ctx);
  }
}

double LayerExecution::run() {
  const auto start = std::chrono::steady_clock::now();
  capture_ = !captured_;
  for (int64_t l = 0; l < s_.layers; ++l) forwardLayer(l);
  if (s_.pass == Pass::train)
    for (int64_t l = last(); l >= 0; --l) backwardLayer(l);
  captured_ = true;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// q, k, v = split(x w_qkv^T + b_qkv), into buffers allocated here.
void LayerExecution::project(int64_t l) {
  LayerState& L = layers_[static_cast<size_t>(l)];
  PhaseScope phase(ctx_, "qkv_proj");
  L.q = fresh("q", s_.qElements());
  L.k = fresh("k", s_.kvElements());
  L.v = fresh("v", s_.kvElements());
  const RowMatrix x = plain(input(l), d_.e), qkv = split({{&L.q, s_.heads}, {&L.k, s_.kvHeads()}, {&L.v, s_.kvHeads()}});
  runRowProduct({&x, L.w_qkv.data(), true, L.b_qkv.data(), &qkv, d_.e, d_.qkv, "w_qkv^T", "qkv_proj"}, d_.rows, ctx_,
                pool_);
}

// o = attention(q, k, v) by the layer's core, into o allocated here.
void LayerExecution::attend(int64_t l, bool keep) {
  LayerState& L = layers_[static_cast<size_t>(l)];
  L.o = fresh("o", s_.qElements());
  Bound bound(t_, L);
  L.core->forward(keep);
}

void LayerExecution::forwardLayer(int64_t l) {
  LayerState& L = layers_[static_cast<size_t>(l)];
  TagPrefixScope prefix(ctx_.allocator(), bufferPrefix(s_, l));
  std::optional<PhaseScope> layer;
  if (s_.layers > 1) layer.emplace(ctx_, "L" + std::to_string(l + 1));
  const bool frees = forwardFrees(s_);
  if (capture_ && ctx_.keepIntermediates() && l > 0) L.mid.x = hostCopy(s_.dtype, input(l), {s_.batch, s_.seq_q, d_.e});
  project(l);
  if (s_.pass != Pass::train && l > 0) input(l).reset();  // read by this layer's projection only
  attend(l, AttentionCore::keepsInForward(s_));
  if (frees) {
    if (capture_ && ctx_.keepIntermediates()) copyActivations(L);
    L.q.reset();
    L.k.reset();
    L.v.reset();
  }
  {
    PhaseScope phase(ctx_, "out_proj");
    Buffer<uint8_t>& y = outputOf(l);
    if (l != last()) y = fresh("y", d_.rows * d_.e);
    const RowMatrix o = split({{&L.o, s_.heads}}), out = plain(y, d_.e);
    runRowProduct({&o, L.w_o.data(), true, L.b_o.data(), &out, d_.hd, d_.e, "w_o^T", "out_proj"}, d_.rows, ctx_, pool_);
  }
  if (frees) L.o.reset();
}

void LayerExecution::backwardLayer(int64_t l) {
  LayerState& L = layers_[static_cast<size_t>(l)];
  TagPrefixScope prefix(ctx_.allocator(), bufferPrefix(s_, l));
  std::optional<PhaseScope> layer;
  if (s_.layers > 1) layer.emplace(ctx_, "L" + std::to_string(l + 1));
  const int64_t H = s_.heads, Hkv = s_.kvHeads();
  if (s_.checkpoint == Checkpoint::layer) {
    PhaseScope phase(ctx_, "recompute");
    project(l);
    attend(l, true);
  }
  const RowMatrix g = plain(gradientIn(l), d_.e);
  {
    PhaseScope phase(ctx_, "out_proj_backward");
    L.d_o = fresh("dO", s_.qElements());
    const RowMatrix o = split({{&L.o, H}}), d_o = split({{&L.d_o, H}});
    {
      PhaseScope part(ctx_, "dO");
      runRowProduct({&g, L.w_o.data(), false, nullptr, &d_o, d_.e, d_.hd, "w_o", "out_proj_backward dO"}, d_.rows,
                    ctx_, pool_);
    }
    PhaseScope part(ctx_, "dw_o");
    runWeightGradient({&g, &o, L.dw_o.data(), L.db_o.data(), s_.dtype, "out_proj_backward dw_o sums", "o"}, d_.rows,
                      ctx_, pool_);
  }
  if (s_.checkpoint == Checkpoint::attention) {
    PhaseScope phase(ctx_, "recompute");
    Bound bound(t_, L);
    L.core->forward(true);
  }
  L.dq = fresh("dq", s_.qElements());
  L.dk = fresh("dk", s_.kvElements());
  L.dv = fresh("dv", s_.kvElements());
  {
    Bound bound(t_, L);
    L.core->backward();
  }
  if (capture_ && ctx_.keepIntermediates()) {
    if (!forwardFrees(s_)) copyActivations(L);
    copyGradients(L);
  }
  for (Buffer<uint8_t>* b : {&L.q, &L.k, &L.v, &L.o, &L.d_o}) b->reset();
  {
    PhaseScope phase(ctx_, "qkv_proj_backward");
    const RowMatrix dqkv = split({{&L.dq, H}, {&L.dk, Hkv}, {&L.dv, Hkv}}), x = plain(input(l), d_.e);
    Buffer<uint8_t>& dx_buffer = gradientOut(l);
    if (l > 0) dx_buffer = fresh("dx", d_.rows * d_.e);
    const RowMatrix dx = plain(dx_buffer, d_.e);
    {
      PhaseScope part(ctx_, "dx");
      runRowProduct({&dqkv, L.w_qkv.data(), false, nullptr, &dx, d_.qkv, d_.e, "w_qkv", "qkv_proj_backward dx"},
                    d_.rows, ctx_, pool_);
    }
    PhaseScope part(ctx_, "dw_qkv");
    runWeightGradient({&dqkv, &x, L.dw_qkv.data(), L.db_qkv.data(), s_.dtype, "qkv_proj_backward dw_qkv sums", "x"},
                      d_.rows, ctx_, pool_);
  }
  // dx of a deeper layer is the previous layer's G: read there, then freed; kept as float for
  // layerGradients (the first run's: every run computes the same).
  if (l > 0 && capture_) {
    L.dx_copy.resize(static_cast<size_t>(d_.rows * d_.e));
    toFloat(s_.dtype, L.dx.data(), 0, d_.rows * d_.e, L.dx_copy.data());
  }
  for (Buffer<uint8_t>* b : {&L.dq, &L.dk, &L.dv}) b->reset();
  if (l != last()) gradientIn(l).reset();
  if (l > 0) input(l).reset();
}

void LayerExecution::copyActivations(LayerState& L) {
  const int64_t B = s_.batch, H = s_.heads, Hkv = s_.kvHeads(), L_ = s_.seq_q, D = s_.headDim();
  L.mid.q = hostCopy(s_.dtype, L.q, {B, H, L_, D});
  L.mid.k = hostCopy(s_.dtype, L.k, {B, Hkv, L_, D});
  L.mid.v = hostCopy(s_.dtype, L.v, {B, Hkv, L_, D});
  L.mid.o = hostCopy(s_.dtype, L.o, {B, H, L_, D});
}

void LayerExecution::copyGradients(LayerState& L) {
  const int64_t B = s_.batch, H = s_.heads, Hkv = s_.kvHeads(), L_ = s_.seq_q, D = s_.headDim();
  L.mid.d_o = hostCopy(s_.dtype, L.d_o, {B, H, L_, D});
  L.mid.dq = hostCopy(s_.dtype, L.dq, {B, H, L_, D});
  L.mid.dk = hostCopy(s_.dtype, L.dk, {B, Hkv, L_, D});
  L.mid.dv = hostCopy(s_.dtype, L.dv, {B, Hkv, L_, D});
}

bool LayerExecution::layerGradients(std::vector<LayerGradients>& out) {
  if (s_.pass != Pass::train || !captured_) return false;
  auto asFloat = [&](const Buffer<uint8_t>& b, std::vector<float>& v) {
    v.resize(static_cast<size_t>(b.bytes() / bytesPerElement(s_.dtype)));
    toFloat(s_.dtype, b.data(), 0, static_cast<int64_t>(v.size()), v.data());
  };
  out.assign(layers_.size(), {});
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerState& L = layers_[l];
    if (l == 0) asFloat(dx_, out[l].dx);
    else out[l].dx = L.dx_copy;
    asFloat(L.dw_qkv, out[l].dw_qkv);
    asFloat(L.db_qkv, out[l].db_qkv);
    asFloat(L.dw_o, out[l].dw_o);
    asFloat(L.db_o, out[l].db_o);
  }
  return true;
}

bool LayerExecution::layerIntermediates(std::vector<LayerIntermediates>& out) {
  if (!captured_ || !ctx_.keepIntermediates()) return false;
  out.clear();
  for (const LayerState& L : layers_) out.push_back(L.mid);
  return true;
}

// Runs `add` (which adds steps and buffers to p) and prefixes what it added with layer l's names.
template <typename F>
void inLayer(MemoryPlan& p, const WorkloadSpec& s, int64_t l, F&& add, const std::string& steps = {}) {
  const size_t step0 = p.steps.size(), buffer0 = p.buffers.size();
  add();
  for (size_t i = step0; i < p.steps.size(); ++i) p.steps[i] = stepPrefix(s, l) + steps + p.steps[i];
  for (size_t i = buffer0; i < p.buffers.size(); ++i) p.buffers[i].name = bufferPrefix(s, l) + p.buffers[i].name;
}

}  // namespace

MemoryPlan planLayer(const CpuBackend& backend, const WorkloadSpec& spec) {
  const Dims d = Dims::of(spec);
  const int threads = backend.threads();
  const int64_t elem = bytesPerElement(spec.dtype), N = spec.layers;
  const bool train = spec.pass == Pass::train, frees = forwardFrees(spec);
  const WorkloadSpec core = coreSpec(spec);
  MemoryPlan p;
  p.addStep("inputs");
  PlanTails tails;  // to_run_end: the whole-run buffers
  auto whole = [&](const std::string& name, int64_t elements, BufferRole role) {
    tails.to_run_end.push_back(p.buffers.size());
    p.add(name, elements * elem, 0, 0, role);
  };
  // The whole-run buffers, in LayerExecution's order.
  whole("x", d.rows * d.e, BufferRole::input);
  for (int64_t l = 0; l < N; ++l) {
    const std::string at = bufferPrefix(spec, l);
    whole(at + "w_qkv", d.qkv * d.e, BufferRole::input);
    whole(at + "b_qkv", d.qkv, BufferRole::input);
    whole(at + "w_o", d.e * d.hd, BufferRole::input);
    whole(at + "b_o", d.e, BufferRole::input);
  }
  whole("y", d.rows * d.e, BufferRole::output);
  if (train) {
    whole("g", d.rows * d.e, BufferRole::input);
    whole("dx", d.rows * d.e, BufferRole::output);
    for (int64_t l = 0; l < N; ++l) {
      const std::string at = bufferPrefix(spec, l);
      whole(at + "dw_qkv", d.qkv * d.e, BufferRole::output);
      whole(at + "db_qkv", d.qkv, BufferRole::output);
      whole(at + "dw_o", d.e * d.hd, BufferRole::output);
      whole(at + "db_o", d.e, BufferRole::output);
    }
  }
  if (maskIsTensor(spec.mask)) {
    tails.to_run_end.push_back(p.buffers.size());
    p.add("mask", spec.maskBytes(), 0, 0, BufferRole::mask);
  }
  for (int64_t l = 0; l < N; ++l) inLayer(p, spec, l, [&] { backend.planCoreState(p, core, tails); });

  // Per layer, the indices of its buffers whose last step is known later.
  struct Open {
    size_t q = 0, o = 0, y = 0, dx = 0;  // q: q, k, v at q .. q + 2
    PlanTails core;
  };
  std::vector<Open> open(static_cast<size_t>(N));
  const int64_t qe = spec.qElements(), kve = spec.kvElements();
  auto activations = [&](Open& o, int step) {
    o.q = p.buffers.size();
    p.add("q", qe * elem, step, step, BufferRole::workspace);
    p.add("k", kve * elem, step, step, BufferRole::workspace);
    p.add("v", kve * elem, step, step, BufferRole::workspace);
  };
  auto lastStep = [&](size_t buffer, int step) { p.buffers[buffer].last_step = step; };
  auto qkvLast = [&](const Open& o, int step) {
    for (size_t i = 0; i < 3; ++i) lastStep(o.q + i, step);
  };
  auto attention = [&](Open& o, bool keep) {
    const int first = p.stepCount();
    o.o = p.buffers.size();
    p.add("o", qe * elem, first, first, BufferRole::workspace);
    backend.planCoreForward(p, core, o.core, keep);
  };
  for (int64_t l = 0; l < N; ++l) {
    Open& o = open[static_cast<size_t>(l)];
    inLayer(p, spec, l, [&] {
      const int qkv = p.addStep("qkv_proj");
      activations(o, qkv);
      planRowProduct(p, qkv, "qkv_proj", "w_qkv^T", d.rows, d.e, d.qkv, threads, spec.dtype);
      if (!train && l > 0) lastStep(open[static_cast<size_t>(l - 1)].y, qkv);
      attention(o, AttentionCore::keepsInForward(spec));
      if (frees) qkvLast(o, p.stepCount() - 1);
      const int out = p.addStep("out_proj");
      if (l != N - 1) {
        o.y = p.buffers.size();
        p.add("y", d.rows * d.e * elem, out, out, BufferRole::workspace);
      }
      planRowProduct(p, out, "out_proj", "w_o^T", d.rows, d.hd, d.e, threads, spec.dtype);
      if (frees) lastStep(o.o, out);
    });
  }
  if (train) {
    for (int64_t l = N - 1; l >= 0; --l) {
      Open& o = open[static_cast<size_t>(l)];
      size_t d_o = 0;
      if (spec.checkpoint == Checkpoint::layer)
        inLayer(p, spec, l, [&] {
          const int qkv = p.addStep("qkv_proj");
          activations(o, qkv);
          planRowProduct(p, qkv, "qkv_proj", "w_qkv^T", d.rows, d.e, d.qkv, threads, spec.dtype);
          attention(o, true);
        }, "recompute ");
      inLayer(p, spec, l, [&] {
        const int d_o_step = p.addStep("out_proj_backward dO");
        d_o = p.buffers.size();
        p.add("dO", qe * elem, d_o_step, d_o_step, BufferRole::workspace);
        planRowProduct(p, d_o_step, "out_proj_backward dO", "w_o", d.rows, d.e, d.hd, threads, spec.dtype);
        planWeightGradient(p, p.addStep("out_proj_backward dw_o"), "out_proj_backward dw_o sums", "o", d.rows, d.e, d.hd,
                           threads, spec.dtype);
      });
      if (spec.checkpoint == Checkpoint::attention)
        inLayer(p, spec, l, [&] { backend.planCoreForward(p, core, o.core, true); }, "recompute ");
      inLayer(p, spec, l, [&] {
        const int first = p.stepCount();
        const size_t grads = p.buffers.size();
        p.add("dq", qe * elem, first, first, BufferRole::workspace);
        p.add("dk", kve * elem, first, first, BufferRole::workspace);
        p.add("dv", kve * elem, first, first, BufferRole::workspace);
        backend.planCoreBackward(p, core, o.core);
        const int attention_end = p.stepCount() - 1;
        qkvLast(o, attention_end);
        lastStep(o.o, attention_end);
        lastStep(d_o, attention_end);
        const int dx = p.addStep("qkv_proj_backward dx");
        if (l > 0) {
          o.dx = p.buffers.size();
          p.add("dx", d.rows * d.e * elem, dx, dx, BufferRole::workspace);
        }
        planRowProduct(p, dx, "qkv_proj_backward dx", "w_qkv", d.rows, d.qkv, d.e, threads, spec.dtype);
        const int dw = p.addStep("qkv_proj_backward dw_qkv");
        planWeightGradient(p, dw, "qkv_proj_backward dw_qkv sums", "x", d.rows, d.qkv, d.e, threads, spec.dtype);
        for (size_t i = 0; i < 3; ++i) lastStep(grads + i, dw);
        if (l != N - 1) lastStep(open[static_cast<size_t>(l + 1)].dx, dw);
        if (l > 0) lastStep(open[static_cast<size_t>(l - 1)].y, dw);
      });
    }
  }
  PlanTails::close(p, tails.to_run_end);
  return p;
}

std::unique_ptr<Execution> prepareLayer(const CpuBackend& backend, TaskPool& pool, const WorkloadSpec& spec,
                                        const HostInputs& inputs, RunContext& ctx) {
  return std::make_unique<LayerExecution>(backend, pool, spec, inputs, ctx);
}

}  // namespace attnscope::cpu
