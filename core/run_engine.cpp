#include "core/run_engine.h"

#include <algorithm>
#include <chrono>

#include "core/clock.h"
#include "core/format.h"
#include "core/mask.h"
#include "core/memory_timeline.h"
#include "core/reference.h"

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

}  // namespace

RunResult runPoint(Backend& backend, const WorkloadSpec& spec, const RunOptions& opt) {
  const int64_t t0 = nowNs();
  RunResult r;
  r.spec = spec;
  r.backend = backend.id();
  r.device = backend.device();
  r.started_unix_ms = unixMs();
  r.timing.warmup = opt.warmup;
  r.timing.reps = opt.reps;
  auto finish = [&]() -> RunResult {
    r.wall_s = static_cast<double>(nowNs() - t0) * 1e-9;
    return r;
  };

  if (auto errs = validate(spec); !errs.empty()) {
    r.status = RunStatus::error;
    r.message = "invalid spec: " + describe(errs);
    return finish();
  }
  r.flops = forwardFlops(spec);
  r.memory.io_bytes = spec.ioBytes();
  if (Support sup = backend.support(spec); !sup.ok()) {
    r.status = RunStatus::unsupported;
    r.message = joinReasons(sup.reasons);
    return finish();
  }
  r.plan = backend.plan(spec);
  r.memory.predicted_peak = r.plan.peakBytes();
  if (opt.memory_budget >= 0 && r.memory.predicted_peak > opt.memory_budget) {
    r.status = RunStatus::skipped;
    r.message = "predicted peak " + formatBytes(r.memory.predicted_peak) + " exceeds the memory budget " +
                formatBytes(opt.memory_budget);
    return finish();
  }
  r.memory.available = backend.memoryAvailable();
  std::unique_ptr<TrackingAllocator> alloc = backend.makeAllocator();
  if (opt.guard_memory && r.memory.available >= 0) {
    // Host-side staging (inputs, the output copy) sits beside the device buffers; on the CPU it
    // competes for the same memory, so count it there.
    int64_t need = r.memory.predicted_peak;
    if (alloc->kind() == MemoryKind::host)
      need += (opt.inputs ? 0 : spec.ioBytes()) + spec.qElements() * 4;
    if (need > r.memory.available) {
      r.status = RunStatus::oom;
      r.message = "predicted peak " + formatBytes(need) + " exceeds the " + formatBytes(r.memory.available) +
                  " available on " + backend.device() + "; not run";
      return finish();
    }
  }
  if (opt.cancel && opt.cancel->load()) {
    r.status = RunStatus::cancelled;
    r.message = "cancelled before start";
    return finish();
  }

  HostInputs generated;
  const HostInputs* inputs = opt.inputs;
  if (!inputs) {
    generated = HostInputs::generate(spec);
    inputs = &generated;
  }

  RunContext ctx(*alloc, opt.cancel, opt.phase_listener);
  std::vector<float> out;
  if (opt.capture && opt.capture->active()) opt.capture->beginRun();
  try {
    std::unique_ptr<Execution> exec = backend.prepare(spec, *inputs, ctx);
    for (int i = 0; i < opt.warmup; ++i) {
      ctx.throwIfCancelled();
      exec->run();
    }
    for (int i = 0; i < std::max(1, opt.reps); ++i) {
      ctx.throwIfCancelled();
      r.timing.samples_s.push_back(exec->run());
    }
    exec->output(out);
    exec.reset();
  } catch (const Cancelled&) {
    r.status = RunStatus::cancelled;
    r.message = "cancelled";
  } catch (const OutOfMemory& e) {
    r.status = RunStatus::oom;
    r.message = e.what();
  } catch (const std::exception& e) {
    r.status = RunStatus::error;
    r.message = e.what();
  }
  r.memory.measured_peak = alloc->peakBytes();
  r.trace.events = alloc->takeEvents();
  for (auto& e : ctx.takePhaseEvents()) r.trace.events.push_back(std::move(e));
  if (opt.capture) {
    if (opt.capture->active()) {
      Trace device = opt.capture->endRun();
      r.trace.dropped_records = device.dropped_records;
      r.trace.capture_note = device.capture_note;
      for (auto& e : device.events) r.trace.events.push_back(std::move(e));
      // CUPTI's own view of device memory allocated during the run; meaningless for host backends.
      if (alloc->kind() != MemoryKind::host)
        r.memory.cupti_peak =
            MemoryTimeline(r.trace.events, MemoryFilter{EventSource::cupti, MemoryKind::device, std::nullopt}).peakBytes();
    } else {
      r.trace.capture_note = opt.capture->note();
    }
  }
  std::stable_sort(r.trace.events.begin(), r.trace.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  summarise(r.timing);

  if (r.status == RunStatus::ok) {
    if (opt.check_accuracy) {
      r.accuracy = checkAccuracy(spec, *inputs, out);
      if (!r.accuracy.passed())
        r.message = "accuracy check failed: max abs error " + std::to_string(r.accuracy.max_abs_error) +
                    " > tolerance " + std::to_string(r.accuracy.tolerance);
    }
    if (opt.output) *opt.output = std::move(out);
  }
  return finish();
}

}  // namespace attnscope
