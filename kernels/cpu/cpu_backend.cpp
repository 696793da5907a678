#include "kernels/cpu/cpu_backend.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/cpu_layer.h"
#include "kernels/cpu/dtype_rows.h"

namespace attnscope::cpu {

void checkInputTensor(const char* name, const HostTensor& t, DType dtype, int64_t elements) {
  if (t.dtype != dtype)
    throw std::invalid_argument(std::string("input ") + name + " is " + std::string(toString(t.dtype)) +
                                " but the spec says " + std::string(toString(dtype)));
  if (t.elements() != elements || static_cast<int64_t>(t.bytes.size()) != elements * bytesPerElement(dtype))
    throw std::invalid_argument(std::string("input ") + name + " has " + std::to_string(t.elements()) +
                                " elements but the spec needs " + std::to_string(elements));
}

void checkMaskInput(const WorkloadSpec& spec, const HostInputs& in) {
  if (spec.mask.kind == MaskKind::dense && static_cast<int64_t>(in.mask.size()) != spec.maskBytes())
    throw std::invalid_argument("the dense mask has " + std::to_string(in.mask.size()) + " elements but the spec needs " +
                                std::to_string(spec.maskBytes()));
  if (spec.mask.kind == MaskKind::additive)
    checkInputTensor("mask (additive)", in.additive_mask, spec.maskDType(), spec.maskElements());
}

Buffer<uint8_t> copyMask(RunContext& ctx, const WorkloadSpec& spec, const HostInputs& in) {
  if (spec.mask.kind == MaskKind::dense) return copyToBuffer(ctx, in.mask, "mask");
  if (spec.mask.kind == MaskKind::additive) return copyToBuffer(ctx, in.additive_mask.bytes, "mask");
  return {};
}

Buffer<uint8_t> copyToBuffer(RunContext& ctx, const std::vector<uint8_t>& bytes, const char* tag) {
  constexpr size_t kSlice = size_t{8} << 20;
  Buffer<uint8_t> b(ctx.allocator(), static_cast<int64_t>(bytes.size()), tag);
  for (size_t at = 0; at < bytes.size(); at += kSlice) {
    ctx.throwIfCancelled();
    std::memcpy(b.data() + at, bytes.data() + at, std::min(kSlice, bytes.size() - at));
  }
  return b;
}

RunTensors RunTensors::allocate(const WorkloadSpec& spec, const HostInputs& in, RunContext& ctx) {
  checkInputTensor("q", in.q, spec.dtype, spec.qElements());
  checkInputTensor("k", in.k, spec.dtype, spec.kvElements());
  checkInputTensor("v", in.v, spec.dtype, spec.kvElements());
  checkMaskInput(spec, in);
  RunTensors t;
  t.q = copyToBuffer(ctx, in.q.bytes, "q");
  t.k = copyToBuffer(ctx, in.k.bytes, "k");
  t.v = copyToBuffer(ctx, in.v.bytes, "v");
  t.mask = copyMask(ctx, spec, in);
  t.o = Buffer<uint8_t>(ctx.allocator(), spec.qElements() * bytesPerElement(spec.dtype), "o");
  if (spec.pass == Pass::train) {
    if (in.g.elements() == 0) throw std::invalid_argument("a train pass needs the output gradient g in the inputs");
    checkInputTensor("g", in.g, spec.dtype, spec.qElements());
    const int64_t e = bytesPerElement(spec.dtype);
    t.g = copyToBuffer(ctx, in.g.bytes, "g");
    t.dq = Buffer<uint8_t>(ctx.allocator(), spec.qElements() * e, "dq");
    t.dk = Buffer<uint8_t>(ctx.allocator(), spec.kvElements() * e, "dk");
    t.dv = Buffer<uint8_t>(ctx.allocator(), spec.kvElements() * e, "dv");
  }
  return t;
}

void planRunTensors(MemoryPlan& plan, const WorkloadSpec& spec, int first, int last) {
  const int64_t e = bytesPerElement(spec.dtype);
  plan.add("q", spec.qElements() * e, first, last, BufferRole::input);
  plan.add("k", spec.kvElements() * e, first, last, BufferRole::input);
  plan.add("v", spec.kvElements() * e, first, last, BufferRole::input);
  if (maskIsTensor(spec.mask)) plan.add("mask", spec.maskBytes(), first, last, BufferRole::mask);
  plan.add("o", spec.qElements() * e, first, last, BufferRole::output);
  if (spec.pass != Pass::train) return;
  plan.add("g", spec.qElements() * e, first, last, BufferRole::input);
  plan.add("dq", spec.qElements() * e, first, last, BufferRole::output);
  plan.add("dk", spec.kvElements() * e, first, last, BufferRole::output);
  plan.add("dv", spec.kvElements() * e, first, last, BufferRole::output);
}

bool gradientsAsFloat(const WorkloadSpec& spec, const RunTensors& t, AttentionGradients& out) {
  if (spec.pass != Pass::train) return false;
  out.dq.resize(static_cast<size_t>(spec.qElements()));
  out.dk.resize(static_cast<size_t>(spec.kvElements()));
  out.dv.resize(static_cast<size_t>(spec.kvElements()));
  toFloat(spec.dtype, t.dq.data(), 0, spec.qElements(), out.dq.data());
  toFloat(spec.dtype, t.dk.data(), 0, spec.kvElements(), out.dk.data());
  toFloat(spec.dtype, t.dv.data(), 0, spec.kvElements(), out.dv.data());
  return true;
}

void outputAsFloat(const WorkloadSpec& spec, const Buffer<uint8_t>& o, std::vector<float>& out) {
  out.resize(static_cast<size_t>(spec.qElements()));
  toFloat(spec.dtype, o.data(), 0, spec.qElements(), out.data());
}

CpuBackend::CpuBackend(std::shared_ptr<TaskPool> pool)
    : pool_(pool ? std::move(pool) : std::make_shared<TaskPool>()) {}

Support CpuBackend::support(const WorkloadSpec& spec) const {
  Support s;
  for (const auto& e : validate(spec)) s.reasons.push_back("invalid spec: " + e.message);
  if (!s.ok()) return s;
  if (const std::string problem = cpuIsaProblem(); !problem.empty()) s.reasons.push_back(problem);
  if (spec.checkpoint == Checkpoint::attention && spec.pass != Pass::train)
    s.reasons.push_back("checkpoint attention needs pass train (a forward pass saves nothing for a backward)");
  if (spec.tp > 1)
    s.reasons.push_back("tp " + std::to_string(spec.tp) +
                        ": tensor parallelism runs on the torch backends (torch.distributed); cpu.* runs one process");
  return s;
}

std::unique_ptr<TrackingAllocator> CpuBackend::makeAllocator() const { return std::make_unique<HostAllocator>(); }

void PlanTails::close(MemoryPlan& plan, std::vector<size_t>& which) {
  for (size_t i : which) plan.buffers[i].last_step = plan.stepCount() - 1;
  which.clear();
}

namespace {

// kind = attention: the core on copies of the inputs.
class AttentionExecution final : public Execution {
 public:
  AttentionExecution(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx, const CpuBackend& backend)
      : s_(spec), t_(RunTensors::allocate(spec, inputs, ctx)), core_(backend.makeCore(s_, t_, ctx)) {}

  double run() override {
    const auto start = std::chrono::steady_clock::now();
    core_->forward(AttentionCore::keepsInForward(s_));
    if (s_.pass == Pass::train) core_->backward();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void output(std::vector<float>& out) override { outputAsFloat(s_, t_.o, out); }
  bool gradients(AttentionGradients& out) override { return gradientsAsFloat(s_, t_, out); }

 private:
  const WorkloadSpec s_;
  RunTensors t_;
  std::unique_ptr<AttentionCore> core_;
};

}  // namespace

MemoryPlan CpuBackend::plan(const WorkloadSpec& spec) const {
  if (spec.kind == WorkloadKind::layer) return planLayer(*this, spec);
  MemoryPlan p;
  p.addStep("inputs");
  PlanTails tails;
  const size_t first = p.buffers.size();
  planRunTensors(p, spec, 0, 0);
  for (size_t i = first; i < p.buffers.size(); ++i) tails.to_run_end.push_back(i);
  planCoreState(p, spec, tails);
  planCoreForward(p, spec, tails, AttentionCore::keepsInForward(spec));
  if (spec.pass == Pass::train) planCoreBackward(p, spec, tails);
  PlanTails::close(p, tails.to_run_end);
  return p;
}

std::unique_ptr<Execution> CpuBackend::prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) {
  PhaseScope phase(ctx, "inputs");
  if (spec.kind == WorkloadKind::layer) return prepareLayer(*this, *pool_, spec, inputs, ctx);
  return std::make_unique<AttentionExecution>(spec, inputs, ctx, *this);
}

}  // namespace attnscope::cpu
