// Store throughput: 1,000,000 synthetic but realistic trace events (allocations, frees and
// kernels with long templated names, as CUPTI reports them) saved as one run and read back.
// Prints events/s for insert and read; docs/PERFORMANCE.md records the numbers.
//
//   bench_store [events] [folder]      default 1000000 events, a temporary folder
#include <stdlib.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/store/store.h"

using namespace attnscope;

namespace {

// A run's events the way a CUDA run produces them: per step one allocation, two or three
// kernels from a small set of names, a free; a phase every thousand events.
std::vector<TraceEvent> makeEvents(int64_t count) {
  static const char* kernels[] = {
      "void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 64, 4, false, false, cutlass::half_t>, true, "
      "false, false>(Flash_fwd_params)",
      "ampere_sgemm_128x64_tn",
      "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*, float const*, "
      "int)",
      "attnscope::cuda::mask_expand_kernel",
      "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)",
  };
  std::vector<TraceEvent> out;
  out.reserve(static_cast<size_t>(count));
  int64_t t = 1'700'000'000'000'000'000;
  uint64_t address = 0x7f00'0000'0000;
  for (int64_t i = 0; out.size() < static_cast<size_t>(count); ++i) {
    TraceEvent a;
    a.kind = EventKind::alloc;
    a.source = EventSource::allocator;
    a.memory = MemoryKind::device;
    a.start_ns = a.end_ns = t;
    a.name = i % 3 == 0 ? "scores" : "probabilities";
    a.bytes = (int64_t{1} << 20) * (1 + i % 64);
    a.address = address + static_cast<uint64_t>(i % 512) * (uint64_t{1} << 26);
    out.push_back(a);
    for (int k = 0; k < 2 + i % 2 && out.size() < static_cast<size_t>(count); ++k) {
      TraceEvent e;
      e.kind = EventKind::kernel;
      e.source = EventSource::cupti;
      e.memory = MemoryKind::device;
      e.start_ns = t + 2000 + k * 45'000;
      e.end_ns = e.start_ns + 40'000 + (i * 7919) % 5000;
      e.name = kernels[(i + k) % 5];
      e.stream = 7 + static_cast<uint32_t>(k % 2);
      e.correlation = static_cast<uint64_t>(i * 4 + k);
      e.kernel = KernelInfo{{static_cast<int32_t>(64 + i % 512), 8, 2}, {128, 1, 1}, 96, 0, 49152};
      out.push_back(e);
    }
    if (out.size() < static_cast<size_t>(count)) {
      TraceEvent f = a;
      f.kind = EventKind::free;
      f.start_ns = f.end_ns = t + 150'000;
      out.push_back(f);
    }
    if (i % 1000 == 999 && out.size() < static_cast<size_t>(count)) {
      TraceEvent p;
      p.kind = EventKind::phase;
      p.start_ns = t - 1000 * 160'000;
      p.end_ns = t + 160'000;
      p.name = "step " + std::to_string(i / 1000);
      out.push_back(p);
    }
    t += 160'000;
  }
  return out;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

// CPU time of this process: the machine is shared, so wall time alone mixes in other jobs.
double cpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t count = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  std::filesystem::path folder;
  bool temporary = argc <= 2;
  if (temporary) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "attnscope-bench-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return 1;
    folder = tmpl;
  } else {
    folder = argv[2];
  }
  std::string path = (folder / "bench.sqlite").string();
  std::filesystem::remove(path);

  RunResult run;
  run.backend = "cuda.flash";
  run.device = "synthetic";
  run.trace.events = makeEvents(count);

  using clock = std::chrono::steady_clock;
  int64_t run_id = 0;
  double insert_s = 0, read_s = 0, first_read_s = 0, insert_cpu_s = 0, read_cpu_s = 0;
  size_t read_count = 0;
  {
    Store store(path);
    int64_t sweep = store.createSweep(SweepSpec{}, 0);
    store.saveRun(sweep, RunResult{});  // warm the statement cache and the file
    auto t0 = clock::now();
    double c0 = cpuSeconds();
    run_id = store.saveRun(sweep, run);
    insert_cpu_s = cpuSeconds() - c0;
    insert_s = seconds(clock::now() - t0);
  }
  double open_s = 0;
  {
    auto t_open = clock::now();
    Store store(path, StoreMode::existing);  // includes the read-only inspection and PRAGMA quick_check
    open_s = seconds(clock::now() - t_open);
    auto t0 = clock::now();
    read_count = store.events(run_id).size();
    first_read_s = seconds(clock::now() - t0);
    t0 = clock::now();
    double c0 = cpuSeconds();
    read_count = store.events(run_id).size();
    read_cpu_s = cpuSeconds() - c0;
    read_s = seconds(clock::now() - t0);
  }
  auto bytes = std::filesystem::file_size(path);
  std::printf("events            %lld\n", static_cast<long long>(count));
  std::printf("insert            %.3f s   %.0f events/s   (one saveRun: one transaction, commit and fsync)\n",
              insert_s, static_cast<double>(count) / insert_s);
  std::printf("insert CPU time   %.3f s   %.0f events/s per CPU second\n", insert_cpu_s,
              static_cast<double>(count) / insert_cpu_s);
  std::printf("read (first)      %.3f s   %.0f events/s\n", first_read_s,
              static_cast<double>(read_count) / first_read_s);
  std::printf("read (warm)       %.3f s   %.0f events/s\n", read_s, static_cast<double>(read_count) / read_s);
  std::printf("read CPU time     %.3f s   %.0f events/s per CPU second\n", read_cpu_s,
              static_cast<double>(read_count) / read_cpu_s);
  std::printf("open              %.3f s   (refusal checks and PRAGMA quick_check of the whole file)\n", open_s);
  std::printf("file              %.1f MiB (%.1f bytes/event)\n", static_cast<double>(bytes) / (1 << 20),
              static_cast<double>(bytes) / static_cast<double>(count));
  if (temporary) std::filesystem::remove_all(folder);
  return read_count == static_cast<size_t>(count) ? 0 : 1;
}
