#include "core/engine/run_engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <new>
#include <optional>
#include <stdexcept>

#include "core/base/clock.h"
#include "core/base/format.h"
#include "core/spec/mask.h"
#include "core/trace/memory_timeline.h"
#include "core/check/reference.h"
#include "core/check/reference_grad.h"
#include "core/check/reference_layer.h"

namespace attnscope {
namespace {

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void summarise(Timing& t) {
  if (t.samples_s.empty()) return;
  std::vector<double> v = t.samples_s;
  std::sort(v.begin(), v.end());
  t.min_s = v.front();
  t.max_s = v.back();
  size_t n = v.size();
  t.median_s = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string joinReasons(const std::vector<std::string>& reasons) {
  std::string out;
  for (const auto& r : reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

void addNote(RunResult& r, const std::string& note) { r.message += (r.message.empty() ? "" : "; ") + note; }

// Host bytes runPoint itself holds beside the backend's buffers: generated inputs (unless the
// caller passes them; G too for a train pass) and the float copies of the output and gradients.
int64_t hostStagingBytes(const WorkloadSpec& spec, const RunOptions& opt) {
  const bool train = spec.pass == Pass::train;
  if (spec.kind == WorkloadKind::layer) {
    // Generated inputs, y and the gradients as float, the intermediates' copies for the check
    // (q, k, v, o; train: dO, dq, dk, dv) and their float copies in the check.
    // A stack: each layer's, and the inputs of layers 2..N (x), and their dx as float.
    const int64_t x = spec.batch * spec.seq_q * layerWidth(spec);
    const int64_t io = layerIoBytes(spec),
                  mid = spec.layers * (2 * spec.qElements() + 2 * spec.kvElements()) * (train ? 2 : 1) +
                        (spec.layers - 1) * x;
    return (opt.inputs ? 0 : io) + io / bytesPerElement(spec.dtype) * 4 + mid * (bytesPerElement(spec.dtype) + 4) +
           (train ? (spec.layers - 1) * x * 4 : 0);
  }
  const int64_t g = train ? spec.qElements() * bytesPerElement(spec.dtype) : 0;
  const int64_t grads = train ? (spec.qElements() + 2 * spec.kvElements()) * 4 : 0;
  // The check reads K and V as float: a copy unless they are fp32 already.
  const int64_t check = opt.check != CheckMode::off && spec.dtype != DType::fp32 ? 2 * spec.kvElements() * 4 : 0;
  return (opt.inputs ? 0 : spec.ioBytes() + g) + spec.qElements() * 4 + grads + check;
}

// The time window during which recording was off: CUPTI events inside it are dropped too.
struct UntracedWindow {
  int64_t begin_ns = -1;
  int64_t end_ns = -1;
  bool contains(int64_t t) const { return begin_ns >= 0 && t >= begin_ns && (end_ns < 0 || t < end_ns); }
};

struct PassState {
  std::vector<float> out;
  AttentionGradients grads;  // pass = train
  std::vector<LayerGradients> layer_grads;  // kind = layer, pass = train: per layer
  std::optional<std::vector<LayerIntermediates>> layer_mid;  // kind = layer, when the execution gives them
  UntracedWindow untraced;
  int64_t passes = 0;
  double seconds = 0;  // of every pass, warm-up included: what auto weighs the check against
};

void setRecording(TrackingAllocator& alloc, RunContext& ctx, bool on) {
  alloc.setRecording(on);
  ctx.setRecording(on);
}

// Inputs, prepare, warm-up, timed repetitions, output. Failures become the result's status.
void execute(Backend& backend, const WorkloadSpec& spec, const RunOptions& opt, TrackingAllocator& alloc,
             RunContext& ctx, const HostInputs*& inputs, HostInputs& generated, PassState& ex, RunResult& r) {
  try {
    if (!inputs) {
      generated = HostInputs::generate(spec, opt.cancel);
      inputs = &generated;
    }
    if (spec.pass == Pass::train && inputs->g.elements() != spec.qElements())
      throw std::invalid_argument("a train pass needs the output gradient g in the inputs");
    std::unique_ptr<Execution> exec = backend.prepare(spec, *inputs, ctx);
    int64_t warmup = opt.warmup;
    double warm_s = 0;
    for (int64_t pass = 0; pass < warmup + std::max(1, opt.reps); ++pass) {
      ctx.throwIfCancelled();
      if (pass == kTracedPasses) {
        ex.untraced.begin_ns = nowNs();
        setRecording(alloc, ctx, false);
      }
      const double seconds = exec->run();
      if (pass >= warmup) r.timing.samples_s.push_back(seconds);
      else warm_s += seconds;
      // The last warm-up pass, short of warmup_seconds: one more (at most kMaxReps in all).
      if (pass == warmup - 1 && warm_s < opt.warmup_seconds && warmup < kMaxReps) ++warmup;
      ++ex.passes;
      ex.seconds += seconds;
    }
    r.timing.warmup = static_cast<int>(warmup);
    if (ex.untraced.begin_ns >= 0) {
      ex.untraced.end_ns = nowNs();
      setRecording(alloc, ctx, true);
    }
    exec->output(ex.out);
    const bool layer = spec.kind == WorkloadKind::layer;
    if (spec.pass == Pass::train && !(layer ? exec->layerGradients(ex.layer_grads) : exec->gradients(ex.grads)))
      throw std::runtime_error(backend.id() + " returned no gradients for a train pass");
    if (layer && opt.check != CheckMode::off && !exec->layerIntermediates(ex.layer_mid.emplace())) ex.layer_mid.reset();
    exec.reset();
  } catch (const Cancelled&) {
    r.status = RunStatus::cancelled;
    r.message = "cancelled";
  } catch (const OutOfMemory& e) {
    r.status = RunStatus::oom;
    r.message = e.what();
  } catch (const std::bad_alloc&) {
    // Host memory ran out outside the tracking allocator (inputs, staging, the backend's own
    // containers): the point is oom, not a crash of the sweep.
    r.status = RunStatus::oom;
    r.message = "out of host memory (allocation failed; " + formatBytes(std::max<int64_t>(0, hostMemoryAvailable())) +
                " available)";
  } catch (const std::length_error& e) {
    r.status = RunStatus::oom;
    r.message = std::string("out of host memory (") + e.what() + ")";
  } catch (const DeviceRefusal& e) {
    r.status = e.kind == DeviceRefusal::Kind::oom ? RunStatus::oom : RunStatus::unsupported;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.status = RunStatus::error;
    r.message = e.what();
  }
  if (ex.untraced.begin_ns >= 0 && ex.untraced.end_ns < 0) {
    ex.untraced.end_ns = nowNs();
    setRecording(alloc, ctx, true);
  }
}

// Trace events from the allocator, the phases and the capture, bounded to the traced passes.
void collectTrace(const RunOptions& opt, TrackingAllocator& alloc, RunContext& ctx, const PassState& ex,
                  RunResult& r) {
  // An out-of-process backend's own measurement replaces the allocator's, which saw none of it.
  r.memory.measured_peak = ctx.measuredPeak().value_or(alloc.peakBytes());
  r.trace.events = alloc.takeEvents();
  for (auto& e : ctx.takePhaseEvents()) r.trace.events.push_back(std::move(e));
  for (auto& e : ctx.takeMeasuredEvents()) r.trace.events.push_back(std::move(e));
  r.facts = ctx.takeFacts();
  for (const auto& w : ctx.takeWarnings()) r.message += (r.message.empty() ? "" : "; ") + w;
  int64_t dropped = alloc.droppedEvents() + ctx.droppedPhases();
  if (opt.capture) {
    if (opt.capture->active()) {
      Trace device = opt.capture->endRun();
      r.trace.dropped_records = device.dropped_records;
      r.trace.capture_note = device.capture_note;
      for (auto& e : device.events) {
        if (ex.untraced.contains(e.start_ns)) {
          ++dropped;
          continue;
        }
        r.trace.events.push_back(std::move(e));
      }
      // CUPTI's own view of device memory allocated during the run; meaningless for host backends.
      if (alloc.kind() != MemoryKind::host)
        r.memory.cupti_peak =
            MemoryTimeline(r.trace.events, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt}).peakBytes();
    } else {
      r.trace.capture_note = opt.capture->note();
    }
  }
  std::stable_sort(r.trace.events.begin(), r.trace.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  if (ex.passes > kTracedPasses)
    addNote(r, "trace: the first " + std::to_string(kTracedPasses) + " of " + std::to_string(ex.passes) +
                   " forward passes kept in full; " + std::to_string(dropped) + " events of the other passes dropped");
}

// The gradients' check joins the output's: the larger error counts and the first problem is named.
void mergeGradientCheck(const WorkloadSpec& spec, const RunOptions& opt, const HostInputs& inputs, const PassState& ex,
                        CheckDepth depth, RunResult& r, std::string& problem) {
  std::string gradProblem;
  const Accuracy g = checkGradients(spec, inputs, ex.grads, opt.cancel, &gradProblem, depth);
  Accuracy& a = r.accuracy;
  if (!(g.max_abs_error <= a.max_abs_error)) a.max_abs_error = g.max_abs_error;
  a.rel_l2_error = std::max(a.rel_l2_error, g.rel_l2_error);
  a.rows_checked += g.rows_checked;
  a.rows_total += g.rows_total;
  if (problem.empty()) problem = gradProblem;
}

// Accuracy against the float64 reference: a failure, or a NaN/Inf anywhere, is status wrong.
void collectAccuracy(const WorkloadSpec& spec, const RunOptions& opt, const HostInputs& inputs, PassState& ex,
                     RunResult& r) {
  if (r.status != RunStatus::ok) return;
  if (opt.check != CheckMode::off) {
    std::string problem;
    const CheckDepth depth = resolveCheck(spec, opt.check, ex.seconds);
    try {
      if (spec.kind == WorkloadKind::layer) {
        r.accuracy = checkStack(spec, inputs, ex.out, &ex.layer_grads, ex.layer_mid ? &*ex.layer_mid : nullptr,
                                opt.cancel, &problem, depth);
      } else {
        r.accuracy = checkAccuracy(spec, inputs, ex.out, opt.cancel, &problem, depth);
        if (spec.pass == Pass::train && r.accuracy.passed()) mergeGradientCheck(spec, opt, inputs, ex, depth, r, problem);
      }
    } catch (const Cancelled&) {
      r.status = RunStatus::cancelled;
      r.message = "cancelled during the accuracy check";
      return;
    } catch (const std::bad_alloc&) {
      r.status = RunStatus::oom;
      r.message = "out of host memory during the accuracy check";
      return;
    }
    if (!r.accuracy.passed()) {
      r.status = RunStatus::wrong;
      r.message = "accuracy check failed: " +
                  (problem.empty() ? "max abs error " + shortNumber(r.accuracy.max_abs_error) + " > tolerance " +
                                         shortNumber(r.accuracy.tolerance)
                                   : problem) +
                  (r.message.empty() ? "" : "; " + r.message);
    }
  }
  if (opt.output) *opt.output = std::move(ex.out);
}

}  // namespace

double pointFlops(const WorkloadSpec& spec) {
  // A train pass counts its backward as 2.5 forwards (five products against two), the usual rule.
  // A layer adds its projections: their backward is two products per forward one.
  // A stack counts each layer's attention (a checkpoint's recompute is not useful work: not counted).
  return forwardFlops(spec) * static_cast<double>(spec.kind == WorkloadKind::layer ? spec.layers : 1) *
             (spec.pass == Pass::train ? 3.5 : 1.0) +
         (spec.kind == WorkloadKind::layer ? layerProjectionFlops(spec) * (spec.pass == Pass::train ? 3.0 : 1.0) : 0.0);
}

RunResult preflight(Backend& backend, const WorkloadSpec& spec, const RunOptions& opt) {
  RunResult r;
  r.spec = spec;
  r.backend = backend.id();
  r.device = backend.device();
  r.started_unix_ms = unixMs();
  r.timing.warmup = opt.warmup;
  r.timing.reps = opt.reps;
  if (auto errs = validate(spec); !errs.empty()) {
    r.status = RunStatus::error;
    r.message = "invalid spec: " + describe(errs);
    return r;
  }
  if (opt.reps < 1 || opt.reps > kMaxReps || opt.warmup < 0 || opt.warmup > kMaxReps) {
    r.status = RunStatus::error;
    r.message = "reps must be in 1.." + std::to_string(kMaxReps) + " and warm-up in 0.." + std::to_string(kMaxReps);
    return r;
  }
  r.flops = pointFlops(spec);
  r.memory.io_bytes = spec.kind == WorkloadKind::layer ? layerIoBytes(spec) : spec.ioBytes() + trainIoBytes(spec);
  const Support sup = backend.support(spec);
  try {
    // Also for a point that will not run, so charts can place it at its prediction.
    r.plan = backend.plan(spec);
    r.memory.predicted_peak = r.plan.peakBytes();
  } catch (const std::exception&) {
    if (sup.ok()) throw;
  }
  if (!sup.ok()) {
    r.status = RunStatus::unsupported;
    r.message = joinReasons(sup.reasons);
    return r;
  }
  if (opt.memory_budget >= 0 && r.memory.predicted_peak > opt.memory_budget) {
    r.status = RunStatus::skipped;
    r.message = "predicted peak " + formatBytes(r.memory.predicted_peak) + " exceeds the memory budget " +
                formatBytes(opt.memory_budget);
    return r;
  }
  r.memory.available = backend.memoryAvailable();
  if (!opt.guard_memory) return r;
  const std::unique_ptr<TrackingAllocator> probe = backend.makeAllocator();
  const bool onHost = probe->kind() == MemoryKind::host;
  const int64_t staging = hostStagingBytes(spec, opt);
  // An unknown plan (-1) guards the staging alone.
  const int64_t need = std::max<int64_t>(0, r.memory.predicted_peak) + (onHost ? staging : 0);
  if (r.memory.available >= 0 && need > r.memory.available) {
    r.status = RunStatus::oom;
    r.message = "predicted peak " + formatBytes(need) + (onHost ? " (inputs and output copy included)" : "") +
                " exceeds the " + formatBytes(r.memory.available) + " available on " + backend.device() + "; not run";
    return r;
  }
  if (!onHost) {
    const int64_t host = hostMemoryAvailable();
    if (host >= 0 && staging > host) {
      r.status = RunStatus::oom;
      r.message = "host staging (inputs and output copy) " + formatBytes(staging) + " exceeds the " +
                  formatBytes(host) + " of host memory available; not run";
    }
  }
  return r;
}

RunResult runPoint(Backend& backend, const WorkloadSpec& spec, const RunOptions& opt) {
  const int64_t t0 = nowNs();
  RunResult r;
  try {
    r = preflight(backend, spec, opt);
  } catch (const std::exception& e) {
    r.status = RunStatus::error;
    r.message = std::string("preflight: ") + e.what();
  }
  auto finish = [&]() -> RunResult {
    r.wall_s = static_cast<double>(nowNs() - t0) * 1e-9;
    return r;
  };
  if (r.status != RunStatus::ok) return finish();
  if (opt.cancel && opt.cancel->load()) {
    r.status = RunStatus::cancelled;
    r.message = "cancelled before start";
    return finish();
  }

  std::unique_ptr<TrackingAllocator> alloc = backend.makeAllocator();
  if (opt.allocator_limit >= 0) alloc->setLimit(opt.allocator_limit);
  RunContext ctx(*alloc, opt.cancel, opt.phase_listener);
  ctx.setKeepIntermediates(spec.kind == WorkloadKind::layer && opt.check != CheckMode::off);
  HostInputs generated;
  const HostInputs* inputs = opt.inputs;
  PassState ex;
  if (opt.capture && opt.capture->active()) opt.capture->beginRun();
  execute(backend, spec, opt, *alloc, ctx, inputs, generated, ex, r);
  collectTrace(opt, *alloc, ctx, ex, r);
  summarise(r.timing);
  if (inputs) collectAccuracy(spec, opt, *inputs, ex, r);
  if (opt.generated_inputs && inputs == &generated) *opt.generated_inputs = std::move(generated);
  if (opt.gradients) *opt.gradients = std::move(ex.grads);
  if (opt.layer_gradients) *opt.layer_gradients = std::move(ex.layer_grads);
  return finish();
}

}  // namespace attnscope
