#include "kernels/torch/torch_backend.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "core/base/clock.h"
#include "core/engine/run_engine.h"
#include "core/inputs/run_files.h"
#include "core/spec/spec_fields.h"
#include "kernels/torch/torch_files.h"
#include "kernels/torch/torch_prediction.h"
#include "kernels/torch/torch_trace.h"

namespace attnscope::torch {
namespace {

// Per request. Generous: one CPU math call at a large size can take minutes, and the limit is
// only there to catch a hung worker. ATTNSCOPE_TORCH_TIMEOUT overrides it.
constexpr double kRequestTimeout = 600;
// Dropping a run's tensors is quick; a worker (or a tp rank) that takes longer is stuck.
constexpr double kReleaseTimeout = 30;
// A measured peak beyond this (1 PiB) is not a measurement.
constexpr int64_t kMaxPeakBytes = int64_t{1} << 50;
// Events kept from the profiled call (phases and inputs, then allocations, then ops); a reply
// with more is refused (WorkerReply::array), so the worker cannot make us hold millions.
constexpr int kMaxTraceEvents = 20000;
// A layer's timed call reports its phases: a handful per layer and rank; more is a broken worker.
size_t maxCallPhases(const WorkloadSpec& s) { return static_cast<size_t>(32 * (s.layers + 1) * s.tp); }
// A rank's time per call beyond this (a day, as for a request) is not a measurement.
constexpr double kMaxRankSeconds = 86400;

// The spec as the worker reads it: every field resolved (spec_fields' resolvedSpec), plus how the
// mask reaches SDPA (none, causal or a tensor in mask.npy).
nlohmann::json specRequest(const WorkloadSpec& s) {
  nlohmann::json j = toJson(resolvedSpec(s));
  j["mask_passing"] = maskPassing(s);
  return j;
}

std::string deviceFact(const TorchHello& h, bool cuda) {
  if (!cuda) return "cpu, " + std::to_string(h.threads) + " threads";
  return h.cuda_devices.empty() ? "cuda" : h.cuda_devices[0].name;
}

class TorchExecution final : public Execution {
 public:
  TorchExecution(TorchSession& session, std::shared_ptr<TorchWorker> worker, RunContext& ctx, const WorkloadSpec& spec)
      : session_(session), worker_(std::move(worker)), ctx_(ctx), spec_(spec) {}

  ~TorchExecution() override {
    if (ctx_.cancelled()) {
      // Cancel means the worker goes, even when the engine noticed it between two requests.
      worker_->kill();
      session_.discard();
      return;
    }
    if (!worker_->alive()) return;
    try {
      worker_->request({{"op", "release"}, {"timeout", kReleaseTimeout}}, kReleaseTimeout, nullptr);
    } catch (const std::exception&) {
      session_.discard();
    }
  }

  void load(const std::string& device, const std::string& kernel, const HostInputs& inputs) {
    PhaseScope phase(ctx_, "load inputs into torch");
    device_ = device;
    writeTorchInputs(folder_, spec_, inputs);
    const WorkerReply r = ask({{"op", "load"}, {"device", device}, {"kernel", kernel}, {"dir", folder_.path()},
                               {"spec", specRequest(spec_)}});
    choice_ = r.text("choice", "", 64);
    if (!choice_.empty()) ctx_.setFact("torch.choice", choice_);
    std::string call;
    for (const auto& n : r.texts("notes", kMaxWarnings)) call += (call.empty() ? "" : "; ") + n;
    if (!call.empty()) ctx_.setFact("torch.call", call);
  }

  double run() override {
    // A layer on the CPU reports its own phases per call (the worker's exact boundaries), top-level
    // like the CPU backends'; elsewhere the call is one phase (a GPU's would need synchronising).
    const bool phased = layer() && device_ == "cpu";
    std::optional<PhaseScope> phase;
    if (!phased) phase.emplace(ctx_, layer() ? "layer call" : "sdpa call");
    const WorkerReply r = ask({{"op", "run"}});
    if (phased) addCallPhases(traceFromWorker(r, "phases", maxCallPhases(spec_)));
    // A timed call cannot take longer than the longest a request may wait.
    return r.number("seconds", 0, kMaxTorchTimeout);
  }

  void output(std::vector<float>& out) override {
    // A layer's profiled call brings its own phases (qkv_proj, attention, ...): they stay top-level
    // so that a sweep's phase columns line up with the other backends'.
    std::optional<PhaseScope> phase;
    if (!layer()) phase.emplace(ctx_, "profiled call");
    const WorkerReply r = ask({{"op", "finish"}, {"dir", folder_.path()}, {"out", folder_.file("out.npy")},
                               {"max_events", kMaxTraceEvents}});
    const std::string ran = r.text("ran", "", 64);
    ctx_.setFact("torch.ran", ran.empty() ? choice_ : ran);
    if (r.has("peak_bytes")) ctx_.reportMeasuredPeak(r.integer("peak_bytes", 0, kMaxPeakBytes, 0));
    ctx_.addMeasuredEvents(traceFromWorker(r, "events", kMaxTraceEvents));
    if (int64_t dropped = r.integer("dropped_events", 0, std::numeric_limits<int64_t>::max(), 0); dropped > 0)
      ctx_.addWarning("trace: " + std::to_string(dropped) + " profiler events beyond the first " +
                      std::to_string(kMaxTraceEvents) + " were left out (ops before allocations)");
    if (spec_.tp > 1) rankFacts(r);
    out = readTorchOutput(folder_.file("out.npy"), spec_);
    if (spec_.pass == Pass::train && layer()) {
      // A deeper layer's dx is not kept by the profiled call (layerGradients reads it later).
      layer_grads_.clear();
      for (int64_t l = 0; l < spec_.layers; ++l) layer_grads_.push_back(readTorchLayerGradients(folder_, spec_, l, l == 0));
    } else if (spec_.pass == Pass::train) {
      const std::vector<int64_t> qs{spec_.batch, spec_.heads, spec_.seq_q, spec_.headDim()};
      const std::vector<int64_t> kvs{spec_.batch, spec_.kvHeads(), spec_.seqKv(), spec_.headDim()};
      grads_.dq = readTorchTensor(folder_.file("dq.npy"), qs);
      grads_.dk = readTorchTensor(folder_.file("dk.npy"), kvs);
      grads_.dv = readTorchTensor(folder_.file("dv.npy"), kvs);
    }
  }

  // Autograd's dQ, dK, dV from the profiled call (read by output()).
  bool gradients(AttentionGradients& out) override {
    if (spec_.pass != Pass::train || grads_.dq.empty()) return false;
    out = grads_;
    return true;
  }

  // Per layer: the profiled call's weight gradients and layer 1's dx; a deeper layer's dx (the
  // gradient reaching the layer below) from the intermediates call, since retaining it in the
  // profiled call would keep one [B,L,E] tensor per layer alive and change the measured peak.
  bool layerGradients(std::vector<LayerGradients>& out) override {
    if (!layer() || spec_.pass != Pass::train || layer_grads_.empty() || layer_grads_.front().dx.empty()) return false;
    if (spec_.layers > 1) {
      keepIntermediates();
      for (int64_t l = 1; l < spec_.layers; ++l)
        layer_grads_[static_cast<size_t>(l)].dx =
            readTorchTensor(folder_.file(layerFileName(l, "dx.npy").c_str()), {spec_.batch, spec_.seq_q, layerWidth(spec_)});
    }
    out = layer_grads_;
    return true;
  }

  // The stages' tensors come from one more call after the profiled one (not timed, not profiled):
  // keeping them during the profiled call would lengthen their lives and change the peak.
  bool layerIntermediates(std::vector<LayerIntermediates>& stack) override {
    if (!layer()) return false;
    keepIntermediates();
    stack.clear();
    for (int64_t l = 0; l < spec_.layers; ++l) stack.push_back(readTorchLayerIntermediates(folder_, spec_, l));
    return true;
  }

 private:
  // One request; torch's refusals become the point's status, protocol failures kill the worker
  // (so the next point starts a fresh one), also when a field read later is wrong.
  WorkerReply ask(nlohmann::json req) {
    std::optional<WorkerReply> reply;
    try {
      // The worker learns our limit: with tp it must name a rank that hangs before we give up on it.
      const double timeout = workerTimeout(kRequestTimeout);
      req["timeout"] = timeout;
      reply.emplace(worker_->request(std::move(req), timeout, ctxCancel()));
    } catch (...) {
      session_.discard();
      throw;
    }
    const WorkerReply& r = *reply;
    for (const auto& w : r.texts("warnings", kMaxWarnings)) ctx_.addWarning("torch: " + w);
    if (r.flag("ok", false)) return std::move(*reply);
    const std::string status = r.text("status", "error", 16), message = r.text("message", "torch failed");
    if (status == "unsupported") throw DeviceRefusal(DeviceRefusal::Kind::unsupported, message);
    if (status == "oom") throw DeviceRefusal(DeviceRefusal::Kind::oom, message);
    if (status != "error") r.fail("status", "is \"" + status + "\", not unsupported, oom or error");
    throw std::runtime_error(message);
  }
  const std::atomic<bool>* ctxCancel() const { return ctx_.cancelFlag(); }

  // The engine keeps the first kTracedPasses passes' events (RunContext stops recording after
  // them); later passes' phases are only counted, as a phase begun while not recording is.
  void addCallPhases(std::vector<TraceEvent> phases) {
    if (calls_++ < kTracedPasses) {
      ctx_.addMeasuredEvents(std::move(phases));
      return;
    }
    for (const TraceEvent& e : phases) {
      ctx_.beginPhase(e.name);
      ctx_.endPhase();
    }
  }
  bool layer() const { return spec_.kind == WorkloadKind::layer; }

  // The intermediates call, once: layerGradients (a stack's deeper dx) and layerIntermediates
  // both read what it wrote.
  void keepIntermediates() {
    if (kept_) return;
    ask({{"op", "intermediates"}, {"dir", folder_.path()}});
    kept_ = true;
  }

  // tp: each rank's peak, time and communication share as facts (the run's peak is already the
  // largest rank's), so the CLI and a chart can show them per rank.
  void rankFacts(const WorkerReply& r) {
    const nlohmann::json& ranks = r.array("ranks", static_cast<size_t>(spec_.tp));
    if (ranks.size() != static_cast<size_t>(spec_.tp))
      r.fail("ranks", "has " + std::to_string(ranks.size()) + " entries for tp " + std::to_string(spec_.tp));
    ctx_.setFact("tp.ranks", std::to_string(spec_.tp));
    ctx_.setFact("tp.backend", onCuda() ? "nccl" : "gloo");
    for (size_t i = 0; i < ranks.size(); ++i) {
      const WorkerReply rank = r.item(ranks[i], "ranks[" + std::to_string(i) + "]");
      const std::string key = "tp.rank" + std::to_string(rank.integer("rank", 0, spec_.tp - 1, 0)) + ".";
      char text[64];
      ctx_.setFact(key + "peak_bytes", std::to_string(rank.integer("peak_bytes", 0, kMaxPeakBytes, 0)));
      std::snprintf(text, sizeof text, "%.6g", rank.number("seconds", 0, kMaxRankSeconds));
      ctx_.setFact(key + "seconds", text);
      const int64_t share = rank.integer("comm_share_ppm", 0, 1000000, 0);
      std::snprintf(text, sizeof text, "%.4f", static_cast<double>(share) / 1e6);
      ctx_.setFact(key + "comm_share", text);
    }
  }
  bool onCuda() const { return device_.rfind("cuda", 0) == 0; }

  TorchSession& session_;
  std::shared_ptr<TorchWorker> worker_;  // shared: a discarded worker stays valid (dead) for us
  RunContext& ctx_;
  WorkloadSpec spec_;
  RunFolder folder_;
  std::string choice_;
  AttentionGradients grads_;
  std::vector<LayerGradients> layer_grads_;  // per layer of the stack
  bool kept_ = false;   // the intermediates call ran
  std::string device_;  // "cpu" or "cuda:0"
  int64_t calls_ = 0;   // timed calls so far
};

}  // namespace

std::shared_ptr<TorchWorker> TorchSession::worker(const std::atomic<bool>* cancel) {
  const PythonChoice python = choosePython();
  // A worker of another Python (the GUI's setting changed between sweeps) is not reused.
  // An idle worker (ours, or the probe's spare) may have died since its last answer: asked first.
  if (worker_ && worker_->python().path == python.path && worker_->answers(cancel)) return worker_;
  worker_.reset();
  if (!python.problem.empty()) throw WorkerFailure(python.problem);
  auto script = workerScript();
  if (!script) throw WorkerFailure(TorchProbe::instance().result() ? TorchProbe::instance().result()->problem
                                                                   : "attnscope_torch_worker.py not found");
  worker_ = TorchProbe::instance().takeSpare(python.path);
  if (worker_ && !worker_->answers(cancel)) worker_.reset();
  if (!worker_) worker_ = std::make_shared<TorchWorker>(python, *script, cancel);
  if (!worker_->hello().usable) {
    const std::string problem = worker_->hello().problem;
    worker_.reset();
    throw WorkerFailure(problem);
  }
  return worker_;
}

std::string TorchBackend::description() const {
  const std::string where = device_ == "cuda" ? "GPU" : "CPU";
  if (kernel_ == "auto") return "PyTorch SDPA on the " + where + " in your Python; torch chooses the kernel";
  return "PyTorch SDPA on the " + where + " in your Python, forced to the " + kernel_ + " kernel";
}

Availability TorchBackend::availability() const {
  auto r = TorchProbe::instance().result();
  if (!r) return {false, "checking " + choosePython().shown() + " for torch..."};
  if (!r->problem.empty()) return {false, r->problem};
  if (onCuda() && !r->hello.cuda_available)
    return {false, "CUDA is not available in torch " + r->hello.torch_version + ": " + r->hello.cuda_reason};
  return {};
}

Support TorchBackend::support(const WorkloadSpec& spec) const {
  // Whether a forced kernel accepts the spec is torch's to say when it runs (its own message
  // becomes the point's status); the explainer's prediction is only a note.
  Support s;
  // A probe cancelled by Ctrl-C knows nothing: let the engine see the cancel and say so.
  if (auto r = TorchProbe::instance().result(); r && r->cancelled) return s;
  if (spec.checkpoint != Checkpoint::none && spec.pass != Pass::train)
    s.reasons.push_back("checkpoint " + std::string(toString(spec.checkpoint)) +
                        " needs pass train (a forward pass saves nothing for a backward)");
  if (Availability a = availability(); !a.available) {
    s.reasons.push_back(a.reason);
    return s;
  }
  if (auto r = TorchProbe::instance().result(); r && spec.tp > 1) {
    // One rank per process: gloo between CPU processes, NCCL between GPUs, one GPU per rank.
    const TorchHello& h = r->hello;
    if (onCuda() && !h.nccl)
      s.reasons.push_back("tp > 1 on CUDA needs torch.distributed with NCCL, which torch " + h.torch_version + " lacks");
    if (!onCuda() && !h.gloo)
      s.reasons.push_back("tp > 1 on the CPU needs torch.distributed with gloo, which torch " + h.torch_version + " lacks");
    if (onCuda() && static_cast<int64_t>(h.cuda_devices.size()) < spec.tp)
      s.reasons.push_back("tp " + std::to_string(spec.tp) + " needs " + std::to_string(spec.tp) +
                          " GPUs (one rank per device); torch sees " + std::to_string(h.cuda_devices.size()));
  }
  if (!s.ok()) return s;
  if (auto r = TorchProbe::instance().result()) s.note = predictTorch(spec, r->hello, onCuda(), kernel_).hint;
  return s;
}

MemoryPlan TorchBackend::plan(const WorkloadSpec& spec) const {
  auto r = TorchProbe::instance().result();
  if (!r) return MemoryPlan::unknown("still checking the Python for torch");
  if (!r->problem.empty()) return MemoryPlan::unknown(r->problem);
  // The explainer models SDPA's forward and, for leaves q, k, v, autograd's backward of it; a
  // layer is its projections' tensors around the call (per rank with tp).
  if (spec.kind == WorkloadKind::layer) return predictTorchLayer(spec, r->hello, onCuda(), kernel_);
  if (spec.pass == Pass::train && spec.checkpoint != Checkpoint::none)
    return MemoryPlan::unknown("no prediction for torch's backward under checkpoint " + std::string(toString(spec.checkpoint)) +
                               " (measured only)");
  MemoryPlan p = predictTorch(spec, r->hello, onCuda(), kernel_).plan;
  // The worker's G (out.backward(G)) is loaded with the inputs, not made when the backward starts.
  if (spec.pass == Pass::train)
    for (PlannedBuffer& b : p.buffers)
      if (b.role == BufferRole::input && b.name.rfind("grad_output", 0) == 0) {
        b.name = "G (grad_output)";
        b.first_step = 0;
      }
  return p;
}

int64_t TorchBackend::memoryAvailable() const { return onCuda() ? -1 : hostMemoryAvailable(); }

std::unique_ptr<TrackingAllocator> TorchBackend::makeAllocator() const {
  // Nothing of ours is allocated for a torch run (torch allocates in its own process); the
  // worker reports its peak and trace through the RunContext instead.
  return std::make_unique<HostAllocator>();
}

std::unique_ptr<Execution> TorchBackend::prepare(const WorkloadSpec& spec, const HostInputs& inputs, RunContext& ctx) {
  // Torch's peak is known only from the profiled call (finish): a run that fails before it (a
  // worker that dies, a refusal) has no measured peak, not our empty allocator's 0 B.
  ctx.reportMeasuredPeak(-1);
  std::shared_ptr<TorchWorker> worker;
  try {
    worker = session_->worker(ctx.cancelFlag());
  } catch (const Cancelled&) {
    throw;
  } catch (const std::exception&) {
    session_->discard();
    throw;
  }
  const TorchHello& h = worker->hello();
  ctx.setFact("python", h.executable + " (Python " + h.python_version + ")");
  ctx.setFact("torch", h.torch_version);
  ctx.setFact("torch.cuda", h.torch_cuda.empty() ? "none (CPU-only build)" : h.torch_cuda);
  if (!h.torch_cudnn.empty()) ctx.setFact("torch.cudnn", h.torch_cudnn);
  ctx.setFact("torch.device", deviceFact(h, onCuda()));
  if (onCuda() && !h.cuda_devices.empty()) ctx.setFact("torch.capability", "sm" + [&] {
    std::string c = h.cuda_devices[0].capability;
    c.erase(std::remove(c.begin(), c.end(), '.'), c.end());
    return c;
  }());
  auto exec = std::make_unique<TorchExecution>(*session_, worker, ctx, spec);
  exec->load(onCuda() ? "cuda:0" : "cpu", kernel_, inputs);
  return exec;
}

}  // namespace attnscope::torch
