// Performance table of the CUDA backends: backend x seq x head_dim x mask x dtype with time,
// TFLOP/s and peak memory (measured by the tracking allocator, beside the plan). Timings are
// printed, never asserted. scripts/gpu-check.sh runs it next to torch's SDPA backends.
//
//   bench_cuda [--batch 1] [--heads 16] [--seq 1024,4096,16384] [--head-dim 64,128]
//              [--mask none,causal] [--dtype fp16,bf16] [--backends cuda.math,cuda.chunked,cuda.flash]
//              [--warmup 2] [--reps 5] [--check] [--capture] [--tsv]
//
// --capture: CUPTI activity tracing on (core/cupti/cupti_capture.h), started before any CUDA call
// and passed as RunOptions::capture; each row then also gives the CUPTI records of the point and
// the records CUPTI dropped. CUPTI stays on for the rest of the process once enabled, so the
// tracing overhead is measured across two processes, one with and one without --capture
// (scripts/gpu-check.sh does that). Only in CUDA builds with CUPTI (ATTNSCOPE_HAVE_CUPTI).
// --tsv: one tab-separated line per point with raw numbers (seconds, bytes) instead of the table;
// lines starting with '#' are comments.
//
// Exit status: 0 once the table is printed, whatever its rows' status (each row says it); 1 when
// there is no usable CUDA device ("bench_cuda: no CUDA device: <the runtime's reason>") or
// --capture was asked for and CUPTI could not start ("bench_cuda: --capture: <why>"); 2 on a
// usage error.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/format.h"
#include "core/engine/run_engine.h"
#include "kernels/cuda/cuda_backends.h"
#include "kernels/cuda/cuda_device.h"

#ifdef ATTNSCOPE_HAVE_CUPTI
#include "core/cupti/cupti_capture.h"
#endif

using namespace attnscope;

namespace {

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "%s\nusage: bench_cuda [--batch N] [--heads N] [--seq L,..] [--head-dim D,..] [--mask M,..] "
               "[--dtype T,..] [--backends ID,..] [--warmup N] [--reps N] [--check] [--capture] [--tsv]\n",
               why);
  return 2;
}

[[maybe_unused]] std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Tabs and newlines in messages would break a TSV row.
std::string oneField(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s.empty() ? "-" : s;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1, heads = 16;
  std::vector<std::string> seqs{"1024", "4096", "16384"}, dims{"64", "128"}, masks{"none", "causal"},
      dtypes{"fp16", "bf16"}, ids{"cuda.math", "cuda.chunked", "cuda.flash"};
  int warmup = 2, reps = 5;
  bool check = false, capture = false, tsv = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage(("missing value after " + a).c_str()));
      return argv[++i];
    };
    if (a == "--batch") batch = std::stoll(next());
    else if (a == "--heads") heads = std::stoll(next());
    else if (a == "--seq") seqs = splitList(next());
    else if (a == "--head-dim") dims = splitList(next());
    else if (a == "--mask") masks = splitList(next());
    else if (a == "--dtype") dtypes = splitList(next());
    else if (a == "--backends") ids = splitList(next());
    else if (a == "--warmup") warmup = std::stoi(next());
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--check") check = true;
    else if (a == "--capture") capture = true;
    else if (a == "--tsv") tsv = true;
    else return usage(("unknown option " + a).c_str());
  }

  // CUPTI must subscribe before the CUDA context exists: before cudaDeviceInfo(), whose probe
  // initialises the runtime.
  TraceCapture* tracer = nullptr;
  if (capture) {
#ifdef ATTNSCOPE_HAVE_CUPTI
    CuptiCapture& c = CuptiCapture::start();
    if (!c.active()) {
      // Without a device CUPTI cannot start either; say the first reason first.
      if (const cuda::CudaDeviceInfo& probe = cuda::cudaDeviceInfo(); !probe.available)
        std::fprintf(stderr, "bench_cuda: no CUDA device: %s\n", probe.reason.c_str());
      else
        std::fprintf(stderr, "bench_cuda: --capture: %s\n", c.note().c_str());
      return 1;
    }
    tracer = &c;
#else
    std::fprintf(stderr, "bench_cuda: --capture: this build has no CUPTI capture (attnscope_cupti not built)\n");
    return 1;
#endif
  }

  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (!info.available) {
    std::fprintf(stderr, "bench_cuda: no CUDA device: %s\n", info.reason.c_str());
    return 1;
  }
  auto all = makeCudaBackends();
  std::vector<Backend*> backends;
  for (const auto& id : ids) {
    Backend* found = nullptr;
    for (auto& b : all)
      if (b->id() == id) found = b.get();
    if (!found) return usage(("unknown backend " + id).c_str());
    backends.push_back(found);
  }

  std::printf("%sAttnScope CUDA backends on %s (cc %d.%d, %d SMs, %s); B=%lld H=%lld; median of %d reps after %d warm-up\n",
              tsv ? "# " : "", info.name.c_str(), info.caps.cc_major, info.caps.cc_minor, info.sm_count,
              formatBytes(info.caps.memory_total).c_str(), static_cast<long long>(batch),
              static_cast<long long>(heads), reps, warmup);
#ifdef ATTNSCOPE_HAVE_CUPTI
  if (tracer)
    std::printf("%scapture: CUPTI on (%s)\n", tsv ? "# " : "", joined(CuptiCapture::start().enabledKinds()).c_str());
  else
#endif
    std::printf("%scapture: off\n", tsv ? "# " : "");
  if (tsv)
    std::printf("backend\tdtype\tD\tmask\tseq\tstatus\tmedian_s\tmin_s\tmax_s\ttflops\tpeak_bytes\tcupti_events\tdropped\tnote\n");
  else
    std::printf("%-13s %-5s %4s %-7s %6s %11s %9s %11s %11s %s%s\n", "backend", "dtype", "D", "mask", "seq", "time",
                "TFLOP/s", "peak", "plan", tracer ? "events dropped " : "", check ? "status / max err" : "status");
  for (const auto& dt : dtypes)
    for (const auto& d : dims)
      for (const auto& m : masks)
        for (const auto& l : seqs) {
          WorkloadSpec spec;
          spec.batch = batch;
          spec.heads = heads;
          spec.seq_q = std::stoll(l);
          spec.head_dim = std::stoll(d);
          if (auto e = setField(spec, "dtype", dt)) return usage(e->message.c_str());
          if (auto e = setField(spec, "mask", m)) return usage(e->message.c_str());
          if (auto errs = validate(spec); !errs.empty()) return usage(describe(errs).c_str());
          const HostInputs inputs = HostInputs::generate(spec);
          for (Backend* b : backends) {
            RunOptions opt;
            opt.warmup = warmup;
            opt.reps = reps;
            opt.check = check ? CheckMode::automatic : CheckMode::off;
            opt.inputs = &inputs;
            opt.capture = tracer;
            const RunResult r = runPoint(*b, spec, opt);
            int64_t cupti_events = 0;
            for (const TraceEvent& e : r.trace.events)
              if (e.source == EventSource::cupti) ++cupti_events;
            char traced[64] = "";
            if (tracer)
              std::snprintf(traced, sizeof traced, "%6lld %7lld ", static_cast<long long>(cupti_events),
                            static_cast<long long>(r.trace.dropped_records));
            std::string status(toString(r.status));
            if (r.status != RunStatus::ok) status += ": " + r.message;
            else if (check) status += " / " + std::to_string(r.accuracy.max_abs_error);
            if (!r.trace.capture_note.empty()) status += " (" + r.trace.capture_note + ")";
            if (tsv) {
              const bool ok = r.status == RunStatus::ok;
              std::printf("%s\t%s\t%s\t%s\t%s\t%s\t%.9g\t%.9g\t%.9g\t%.4g\t%lld\t%lld\t%lld\t%s\n", b->id().c_str(),
                          dt.c_str(), d.c_str(), m.c_str(), l.c_str(), std::string(toString(r.status)).c_str(),
                          ok ? r.timing.median_s : 0.0, ok ? r.timing.min_s : 0.0, ok ? r.timing.max_s : 0.0,
                          ok ? r.flopsPerSecond() * 1e-12 : 0.0, static_cast<long long>(r.memory.measured_peak),
                          static_cast<long long>(tracer ? cupti_events : -1),
                          static_cast<long long>(tracer ? r.trace.dropped_records : -1),
                          oneField(ok ? r.trace.capture_note : r.message).c_str());
            } else if (r.status == RunStatus::ok) {
              std::printf("%-13s %-5s %4s %-7s %6s %11s %9.1f %11s %11s %s%s\n", b->id().c_str(), dt.c_str(), d.c_str(),
                          m.c_str(), l.c_str(), formatDuration(r.timing.median_s).c_str(), r.flopsPerSecond() * 1e-12,
                          formatBytes(r.memory.measured_peak).c_str(), formatBytes(r.memory.predicted_peak).c_str(),
                          traced, status.c_str());
            } else {
              std::printf("%-13s %-5s %4s %-7s %6s %11s %9s %11s %11s %s%s\n", b->id().c_str(), dt.c_str(), d.c_str(),
                          m.c_str(), l.c_str(), "-", "-", "-", formatBytes(r.memory.predicted_peak).c_str(), traced,
                          status.c_str());
            }
            std::fflush(stdout);
          }
        }
  return 0;
}
