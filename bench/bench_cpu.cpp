// bench_cpu: time, throughput and peak memory of cpu.reference and cpu.flash, with the machine's
// measured fp32 GEMM rate for scale. Results are recorded in docs/PERFORMANCE.md.
//
//   bench_cpu [--quick] [--reps N] [--seq 512,1024,...] [--heads N] [--head-dim N]
//
// Each point goes through the real run engine (runPoint) with the accuracy check off; a point
// whose predicted peak does not fit in the memory available is reported as oom, not run.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/format.h"
#include "core/run_engine.h"
#include "kernels/cpu/cpu_blas.h"
#include "kernels/cpu/cpu_flash_backend.h"
#include "kernels/cpu/cpu_reference_backend.h"

using namespace attnscope;

namespace {

struct Options {
  std::vector<int64_t> seqs = {512, 1024, 2048, 4096, 8192};
  int64_t heads = 8;
  int64_t head_dim = 64;
  int reps = 3;
  int gemm_n = 2048;
};

[[noreturn]] void usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: bench_cpu [--quick] [--reps N] [--seq 512,1024,...] [--heads N] [--head-dim N]\n"
               "  --quick   seq 512..2048, one repetition, a smaller GEMM\n");
  std::exit(code);
}

std::vector<int64_t> parseList(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stoll(item));
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2);
      return argv[++i];
    };
    try {
      if (a == "--quick") {
        o.seqs = {512, 1024, 2048};
        o.reps = 1;
        o.gemm_n = 1024;
      } else if (a == "--reps") {
        o.reps = std::stoi(value());
      } else if (a == "--seq") {
        o.seqs = parseList(value());
      } else if (a == "--heads") {
        o.heads = std::stoll(value());
      } else if (a == "--head-dim") {
        o.head_dim = std::stoll(value());
      } else if (a == "--help" || a == "-h") {
        usage(0);
      } else {
        usage(2);
      }
    } catch (const std::exception&) {
      usage(2);
    }
  }
  return o;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// The 1-minute load average: on a shared machine other processes take cores from the bench.
std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one.empty() ? "unknown" : one;
}

// Best of three n^3 sgemm products, in flop/s.
double gemmRate(int n, int threads) {
  cpu::setBlasThreads(threads);
  std::vector<float> a(static_cast<size_t>(n) * n, 0.5f), b(a.size(), 0.25f), c(a.size());
  cpu::sgemm(false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);  // warm-up
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::sgemm(false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  cpu::setBlasThreads(1);
  return 2.0 * n * n * static_cast<double>(n) / best;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int hw = std::max(1u, std::thread::hardware_concurrency());
  auto pool = std::make_shared<cpu::TaskPool>();
  cpu::CpuReferenceBackend reference(pool);
  cpu::CpuFlashBackend flash(pool);

  std::printf("CPU:     %s, %d threads\n", cpuModel().c_str(), hw);
  std::printf("BLAS:    %s\n", cpu::blasDescription().c_str());
  std::printf("Memory:  %s available; load average %s\n", formatBytes(hostMemoryAvailable()).c_str(),
              loadAverage().c_str());
  const double gemm1 = gemmRate(o.gemm_n, 1);
  const double gemm_all = gemmRate(o.gemm_n, hw);
  std::printf("GEMM:    sgemm %d^3: %s on 1 thread, %s on %d threads\n\n", o.gemm_n, formatFlops(gemm1).c_str(),
              formatFlops(gemm_all).c_str(), hw);

  std::printf("B=1 H=%lld D=%lld fp32, no mask; warm-up 1, %d repetitions; throughput from the median\n", static_cast<long long>(o.heads),
              static_cast<long long>(o.head_dim), o.reps);
  std::printf("%-6s  %-14s  %10s  %10s  %14s  %11s  %11s  %s\n", "seq", "backend", "median", "best", "throughput",
              "peak", "predicted", "status");
  std::map<std::pair<int64_t, std::string>, RunResult> results;
  for (int64_t seq : o.seqs) {
    WorkloadSpec spec;
    spec.batch = 1;
    spec.heads = o.heads;
    spec.seq_q = seq;
    spec.head_dim = o.head_dim;
    for (Backend* b : {static_cast<Backend*>(&reference), static_cast<Backend*>(&flash)}) {
      RunOptions opt;
      opt.warmup = 1;
      opt.reps = o.reps;
      opt.check_accuracy = false;
      RunResult r = runPoint(*b, spec, opt);
      const bool ok = r.status == RunStatus::ok;
      std::printf("%-6lld  %-14s  %10s  %10s  %14s  %11s  %11s  %s\n", static_cast<long long>(seq), b->id().c_str(),
                  ok ? formatDuration(r.timing.median_s).c_str() : "-",
                  ok ? formatDuration(r.timing.min_s).c_str() : "-",
                  ok ? formatFlops(r.flopsPerSecond()).c_str() : "-",
                  r.memory.measured_peak > 0 ? formatBytes(r.memory.measured_peak).c_str() : "-",
                  formatBytes(r.memory.predicted_peak).c_str(),
                  ok ? "ok" : (std::string(toString(r.status)) + ": " + r.message).c_str());
      std::fflush(stdout);
      results[{seq, b->id()}] = std::move(r);
    }
  }

  std::printf("\n");
  for (int64_t seq : o.seqs) {
    const RunResult& r = results[{seq, "cpu.reference"}];
    const RunResult& f = results[{seq, "cpu.flash"}];
    if (f.status != RunStatus::ok) continue;
    std::printf("seq %-5lld cpu.flash: %5.1f%% of the all-thread GEMM rate (%5.1f%% of %d x one thread)",
                static_cast<long long>(seq), 100.0 * f.flopsPerSecond() / gemm_all,
                100.0 * f.flopsPerSecond() / (gemm1 * hw), hw);
    if (r.status == RunStatus::ok)
      std::printf(", %.2fx faster than cpu.reference, %.1fx less peak memory", r.timing.median_s / f.timing.median_s,
                  static_cast<double>(r.memory.measured_peak) / static_cast<double>(f.memory.measured_peak));
    std::printf("\n");
  }
  std::printf("load average at the end: %s\n", loadAverage().c_str());
  return 0;
}
