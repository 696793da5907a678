// Performance table of the CUDA backends: backend x seq x head_dim x mask x dtype with time,
// TFLOP/s and peak memory (measured by the tracking allocator, beside the plan). Timings are
// printed, never asserted. scripts/gpu-check.sh runs it next to torch's SDPA backends.
//
//   bench_cuda [--batch 1] [--heads 16] [--seq 1024,4096,16384] [--head-dim 64,128]
//              [--mask none,causal] [--dtype fp16,bf16] [--backends cuda.math,cuda.chunked,cuda.flash]
//              [--warmup 2] [--reps 5] [--check]
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/format.h"
#include "core/run_engine.h"
#include "kernels/cuda/cuda_backends.h"
#include "kernels/cuda/cuda_device.h"

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
               "[--dtype T,..] [--backends ID,..] [--warmup N] [--reps N] [--check]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t batch = 1, heads = 16;
  std::vector<std::string> seqs{"1024", "4096", "16384"}, dims{"64", "128"}, masks{"none", "causal"},
      dtypes{"fp16", "bf16"}, ids{"cuda.math", "cuda.chunked", "cuda.flash"};
  int warmup = 2, reps = 5;
  bool check = false;
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
    else return usage(("unknown option " + a).c_str());
  }

  const cuda::CudaDeviceInfo& info = cuda::cudaDeviceInfo();
  if (!info.available) {
    std::fprintf(stderr, "bench_cuda: no usable CUDA device: %s\n", info.reason.c_str());
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

  std::printf("AttnScope CUDA backends on %s (cc %d.%d, %d SMs, %s); B=%lld H=%lld; median of %d reps after %d warm-up\n",
              info.name.c_str(), info.caps.cc_major, info.caps.cc_minor, info.sm_count,
              formatBytes(info.caps.memory_total).c_str(), static_cast<long long>(batch),
              static_cast<long long>(heads), reps, warmup);
  std::printf("%-13s %-5s %4s %-7s %6s %11s %9s %11s %11s %s\n", "backend", "dtype", "D", "mask", "seq", "time",
              "TFLOP/s", "peak", "plan", check ? "status / max err" : "status");
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
            opt.check_accuracy = check;
            opt.inputs = &inputs;
            const RunResult r = runPoint(*b, spec, opt);
            std::string status(toString(r.status));
            if (r.status != RunStatus::ok) status += ": " + r.message;
            else if (check) status += " / " + std::to_string(r.accuracy.max_abs_error);
            if (r.status == RunStatus::ok)
              std::printf("%-13s %-5s %4s %-7s %6s %11s %9.1f %11s %11s %s\n", b->id().c_str(), dt.c_str(), d.c_str(),
                          m.c_str(), l.c_str(), formatDuration(r.timing.median_s).c_str(), r.flopsPerSecond() * 1e-12,
                          formatBytes(r.memory.measured_peak).c_str(), formatBytes(r.memory.predicted_peak).c_str(),
                          status.c_str());
            else
              std::printf("%-13s %-5s %4s %-7s %6s %11s %9s %11s %11s %s\n", b->id().c_str(), dt.c_str(), d.c_str(),
                          m.c_str(), l.c_str(), "-", "-", "-", formatBytes(r.memory.predicted_peak).c_str(),
                          status.c_str());
            std::fflush(stdout);
          }
        }
  return 0;
}
