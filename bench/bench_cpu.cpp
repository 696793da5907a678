// bench_cpu: cpu.flash and cpu.reference against PyTorch's own CPU SDPA (flash kernel and math
// path), point by point in the same run, plus where cpu.flash's time goes, the tile-product
// rates of our kernels and of OpenBLAS, and the machine's own peak per instruction set with each
// forward point's share of it. Results are recorded in docs/PERFORMANCE.md.
//
//   bench_cpu [--quick | --full] [--seq 1024,4096] [--head-dim 64,128] [--dtype fp32,bf16,fp16]
//             [--mask none,causal] [--heads 8] [--reps 3] [--math-max-seq 2048]
//             [--rounds 3] [--pass forward|train] [--kind attention|layer] [--products]
//             [--isa baseline|avx2|avx512|avx512_bf16|amx_bf16] [--python PATH | --no-torch]
//
// --pass train times forward and backward (ours: the backend's backward; torch: autograd of the
// same SDPA call, out.backward(G)); --kind layer times the whole layer at width heads x head_dim
// (ours: cpu_layer.cpp; torch: F.linear, SDPA, F.linear, under autograd for train); --products
// times the layer's six train products alone instead (layer_products_bench.h), beside torch's.
//
// Each point is measured in rounds that alternate ours and torch's (torch first in every second
// round), so a burst of load on a shared machine falls on both sides rather than on one: times are
// the median of the rounds' medians, ratios the median of the rounds' own ratios, with their range.
//
// Each of our points goes through the real run engine (runPoint) with the accuracy check off; a
// point whose predicted peak does not fit in the memory available is reported as oom, not run.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/cpu_peak.h"
#include "bench/layer_products_bench.h"
#include "bench/torch_peer.h"
#include "core/base/format.h"
#include "core/engine/run_engine.h"
#include "core/trace/phase_summary.h"
#include "kernels/cpu/cpu_blas.h"
#include "kernels/cpu/cpu_flash_backend.h"
#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/cpu_reference_backend.h"
#include "kernels/cpu/flash_profile.h"
#include "kernels/cpu/tile_kernels.h"

using namespace attnscope;

namespace {

struct Options {
  std::vector<int64_t> seqs = {1024, 4096};
  std::vector<int64_t> head_dims = {64, 128};
  std::vector<DType> dtypes = {DType::fp32, DType::bf16, DType::fp16};
  std::vector<std::string> masks = {"none", "causal"};
  int64_t heads = 8;
  int reps = 3;
  int rounds = 3;
  int64_t math_max_seq = 2048;  // cpu.reference and torch math only up to here (they are quadratic in memory)
  std::string isa;
  std::string python;
  bool torch = true;
  Pass pass = Pass::forward;
  WorkloadKind kind = WorkloadKind::attention;
  bool products = false;
  bool seqs_given = false;  // --seq (or --quick / --full) was given
};

[[noreturn]] void usage(int code, const std::string& error = {}) {
  if (!error.empty()) std::fprintf(stderr, "bench_cpu: %s\n", error.c_str());
  std::fprintf(code ? stderr : stdout,
               "usage: bench_cpu [--quick | --full] [--seq 1024,4096] [--head-dim 64,128] [--dtype fp32,bf16,fp16]\n"
               "                 [--mask none,causal] [--heads 8] [--reps 3] [--rounds 3] [--math-max-seq 2048]\n"
               "                 [--pass forward|train] [--kind attention|layer] [--products]\n"
               "                 [--isa baseline|avx2|avx512|avx512_bf16|amx_bf16] [--python PATH | --no-torch]\n"
               "  default   seq 1024,4096; every dtype, head_dim 64 and 128, no mask and causal; 3 reps\n"
               "  --rounds  rounds per point, alternating ours and torch's (default 3): times are the\n"
               "            median of the rounds' medians, a ratio the median of the rounds' ratios\n"
               "  --quick   seq 1024 only, one rep, one round, math path up to 1024\n"
               "  --full    seq 1024,2048,4096,8192,16384, math path up to 4096\n"
               "  --pass    train: forward and backward (torch: autograd of the same call); default forward\n"
               "  --kind    layer: the whole layer at width heads x head_dim (torch: F.linear, SDPA, F.linear)\n"
               "  --products  the layer's six train products alone (qkv_proj, out_proj, dO, dw_o, dx, dw_qkv) at\n"
               "            rows = seq, beside torch's F.linear / matmul on the same shapes (default seq 1024)\n"
               "  --isa     force a kernel variant of this CPU (as ATTNSCOPE_CPU_ISA does)\n"
               "  --python  the Python with torch for the peer (else ATTNSCOPE_PYTHON, else python3)\n");
  std::exit(code);
}

template <class T, class F>
std::vector<T> parseList(const std::string& flag, const std::string& text, F one) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(one(item));
  if (out.empty()) usage(2, flag + " needs at least one value");
  return out;
}

int64_t positive(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  usage(2, flag + " must be a positive integer, got '" + text + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(2, a + " needs a value");
      return argv[++i];
    };
    if (a == "--quick") {
      o.seqs = {1024};
      o.reps = 1;
      o.rounds = 1;
      o.math_max_seq = 1024;
    } else if (a == "--full") {
      o.seqs = {1024, 2048, 4096, 8192, 16384};
      o.seqs_given = true;
      o.math_max_seq = 4096;
    } else if (a == "--seq") {
      o.seqs = parseList<int64_t>(a, value(), [&](const std::string& s) { return positive(a, s); });
      o.seqs_given = true;
    } else if (a == "--head-dim") {
      o.head_dims = parseList<int64_t>(a, value(), [&](const std::string& s) { return positive(a, s); });
    } else if (a == "--dtype") {
      o.dtypes = parseList<DType>(a, value(), [&](const std::string& s) {
        const auto d = parseDType(s);
        if (!d) usage(2, "--dtype: '" + s + "' is not one of fp32, bf16, fp16");
        return *d;
      });
    } else if (a == "--mask") {
      o.masks = parseList<std::string>(a, value(), [&](const std::string& s) {
        if (s != "none" && s != "causal") usage(2, "--mask: '" + s + "' is not one of none, causal");
        return s;
      });
    } else if (a == "--heads") {
      o.heads = positive(a, value());
    } else if (a == "--reps") {
      o.reps = static_cast<int>(positive(a, value()));
    } else if (a == "--rounds") {
      o.rounds = static_cast<int>(positive(a, value()));
    } else if (a == "--math-max-seq") {
      o.math_max_seq = positive(a, value());
    } else if (a == "--isa") {
      o.isa = value();
      const auto isa = cpu::parseCpuIsa(o.isa);
      if (!isa) usage(2, "--isa: '" + o.isa + "' is not one of baseline, avx2, avx512, avx512_bf16, amx_bf16");
      if (!cpu::cpuSupports(*isa)) usage(2, "--isa: this CPU cannot run " + o.isa);
      cpu::setCpuIsaOverride(*isa);
    } else if (a == "--pass") {
      const std::string v = value();
      const auto p = parsePass(v);
      if (!p) usage(2, "--pass: '" + v + "' is not one of forward, train");
      o.pass = *p;
    } else if (a == "--kind") {
      const std::string v = value();
      const auto k = parseWorkloadKind(v);
      if (!k) usage(2, "--kind: '" + v + "' is not one of attention, layer");
      o.kind = *k;
    } else if (a == "--products") {
      o.products = true;
    } else if (a == "--python") {
      o.python = value();
    } else if (a == "--no-torch") {
      o.torch = false;
    } else if (a == "--help" || a == "-h") {
      usage(0);
    } else {
      usage(2, "unknown option " + a);
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

double seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// One thread's rate on cpu.flash's two tile products (S = Q K^T and O += P V) at head_dim d:
// ours (packing included) and OpenBLAS's, alternated so both see the same load. Median of 5.
void tileRates(int64_t d) {
  const cpu::TileKernels& g = cpu::activeTileKernels();
  const int64_t bq = cpu::CpuFlashBackend::kScoreRows, bk = cpu::CpuFlashBackend::kKeyTile;
  std::vector<float> q(bq * d, 0.5f), k(bk * d, 0.25f), v(bk * d, 0.125f), s(bq * bk), o(bq * d);
  std::vector<float> kp(g.packedFloats(d, bk)), vp(g.packedFloats(bk, d));
  cpu::setBlasThreads(1);
  const int tiles = static_cast<int>(std::max<int64_t>(20, (int64_t{1} << 30) / (4 * bq * bk * d)));
  std::vector<double> ours, blas;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < tiles; ++t) {
      g.pack_b(DType::fp32, k.data(), d, true, d, bk, kp.data());
      g.pack_b(DType::fp32, v.data(), d, false, bk, d, vp.data());
      g.gemmPacked(bq, bk, d, 1.0f, q.data(), d, kp.data(), 0.0f, s.data(), bk);
      g.gemmPacked(bq, d, bk, 1.0f, s.data(), bk, vp.data(), 1.0f, o.data(), d);
    }
    ours.push_back(seconds(t0));
    t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < tiles; ++t) {
      cpu::sgemm(true, static_cast<int>(bq), static_cast<int>(bk), static_cast<int>(d), 1.0f, q.data(),
                 static_cast<int>(d), k.data(), static_cast<int>(d), 0.0f, s.data(), static_cast<int>(bk));
      cpu::sgemm(false, static_cast<int>(bq), static_cast<int>(d), static_cast<int>(bk), 1.0f, s.data(),
                 static_cast<int>(bk), v.data(), static_cast<int>(d), 1.0f, o.data(), static_cast<int>(d));
    }
    blas.push_back(seconds(t0));
  }
  std::sort(ours.begin(), ours.end());
  std::sort(blas.begin(), blas.end());
  const double flops = 4.0 * bq * bk * d * tiles;
  std::printf("tile products %lldx%lld, head_dim %lld, 1 thread: own %s, OpenBLAS %s\n", static_cast<long long>(bq),
              static_cast<long long>(bk), static_cast<long long>(d), formatFlops(flops / ours[2]).c_str(),
              formatFlops(flops / blas[2]).c_str());
}

std::string cell(bool ok, double s) { return ok ? formatDuration(s) : "-"; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

RunResult runOurs(Backend& b, const WorkloadSpec& spec, int reps) {
  RunOptions opt;
  opt.warmup = 1;
  opt.warmup_seconds = 0.05;  // as the peer warms torch (a short point right after torch's turn ran slow)
  opt.reps = reps;
  opt.check = CheckMode::off;
  return runPoint(b, spec, opt);
}

// One of our backends and its torch peer path on one point, over the rounds: each round one
// runPoint (warm-up 1, reps) and one peer timing, torch first in every second round. A side that
// fails (oom, unsupported, the peer gone) is not run again; `run` is our last run.
struct Paired {
  RunResult run;
  bench::PeerTiming peer;  // the last reply, for its message when not ok
  std::vector<double> ours_s, peer_s;  // per round: the run's median, the peer's median

  bool oursOk() const { return !ours_s.empty() && run.status == RunStatus::ok; }
  bool peerOk() const { return !peer_s.empty() && peer.ok; }
  double ours() const { return median(ours_s); }
  double torch() const { return median(peer_s); }
  // The rounds' own ratios (torch over ours), where both sides ran.
  std::vector<double> ratios() const {
    std::vector<double> r;
    for (size_t i = 0; i < std::min(ours_s.size(), peer_s.size()); ++i)
      if (ours_s[i] > 0) r.push_back(peer_s[i] / ours_s[i]);
    return r;
  }
};

Paired measure(Backend& b, const WorkloadSpec& spec, bench::TorchPeer* peer, const std::string& path, int reps,
               int rounds) {
  Paired p;
  bool ours_on = true, peer_on = peer != nullptr;
  for (int r = 0; r < rounds && (ours_on || peer_on); ++r) {
    auto runPeer = [&] {
      if (!peer_on) return;
      p.peer = peer->time(spec, path, 1, reps);
      if (p.peer.ok) p.peer_s.push_back(p.peer.median_s);
      peer_on = p.peer.ok;
    };
    if (r % 2) runPeer();
    if (ours_on) {
      p.run = runOurs(b, spec, reps);
      ours_on = p.run.status == RunStatus::ok;
      if (ours_on) p.ours_s.push_back(p.run.timing.median_s);
    }
    if (r % 2 == 0) runPeer();
  }
  return p;
}

std::string ratio(const Paired& p) {
  if (!p.oursOk() || !p.peerOk() || p.ratios().empty()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2fx", median(p.ratios()));
  return buf;
}

// "0.91-1.40": the smallest and largest of the rounds' ratios; "-" with fewer than two.
std::string ratioRange(const Paired& p) {
  const std::vector<double> r = p.ratios();
  if (!p.oursOk() || !p.peerOk() || r.size() < 2) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f-%.2f", *std::min_element(r.begin(), r.end()),
                *std::max_element(r.begin(), r.end()));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto pool = std::make_shared<cpu::TaskPool>();
  cpu::CpuReferenceBackend reference(pool);
  cpu::CpuFlashBackend flash(pool);

  std::printf("CPU:      %s, %d threads; load average %s\n", cpuModel().c_str(), hw, loadAverage().c_str());
  std::printf("Kernels:  %s\n", cpu::cpuKernelDescription().c_str());
  std::printf("OpenBLAS: %s (compared below, not used by the backends)\n", cpu::blasDescription().c_str());
  std::string why;
  std::optional<bench::TorchPeer> peer = o.torch ? bench::TorchPeer::start(o.python, hw, why) : std::nullopt;
  if (o.torch) {
    std::printf("Torch:    %s\n", peer ? peer->description().c_str() : ("not found: " + why).c_str());
  } else {
    std::printf("Torch:    not run (--no-torch)\n");
  }
  for (int64_t d : o.head_dims) tileRates(d);
  // One thread's and all threads' together: two threads on one core's SMT siblings share its
  // FMA units, and the second figure is then no larger than the first.
  const std::vector<bench::PeakRate> one = bench::measurePeaks(1), first = bench::measurePeaks(hw);
  std::vector<bench::PeakRate> peaks = first;  // the best seen: remeasured after each forward point
  for (size_t i = 0; i < first.size(); ++i)
    std::printf("peak %s: 1 thread %s, %d threads %s (multiply-adds in registers)\n", first[i].what.c_str(),
                formatFlops(one[i].flops_per_s).c_str(), hw, formatFlops(first[i].flops_per_s).c_str());
  // The peak a point is held against: the kernels' own variant for its dtype (bf16 tiles use
  // vdpbf16ps under avx512_bf16, AMX tiles under amx_bf16; fp16 and fp32 tiles run fp32 FMAs).
  const cpu::CpuIsa active = cpu::activeCpuIsa();
  // A point's share is taken against the best rate its variant has shown in the run so far, the
  // peak remeasured right after the point (by this call) included: a busy neighbour on a shared machine lowers a
  // measurement of the peak as it lowers the point, and one low reading at the start put points
  // above 100 %.
  auto peakFor = [&](DType dt) -> double {
    const bool bf16_variant = active == cpu::CpuIsa::avx512_bf16 || active == cpu::CpuIsa::amx_bf16;
    const cpu::CpuIsa want = bf16_variant && dt != DType::bf16 ? cpu::CpuIsa::avx512 : active;
    for (bench::PeakRate& p : peaks)
      if (p.isa == want) {
        p.flops_per_s = std::max(p.flops_per_s, bench::measurePeak(hw, want));
        return p.flops_per_s;
      }
    return 0;
  };
  if (o.products) {
    bench::ProductsOptions po;
    po.seqs = o.seqs_given ? o.seqs : std::vector<int64_t>{1024};
    po.head_dims = o.head_dims;
    po.dtypes = o.dtypes;
    po.heads = o.heads;
    po.reps = o.reps;
    po.rounds = o.rounds;
    bench::benchLayerProducts(po, *pool, peer ? &*peer : nullptr, peakFor);
    std::printf("load average at the end: %s\n", loadAverage().c_str());
    return 0;
  }
  const bool forwardAttention = o.pass == Pass::forward && o.kind == WorkloadKind::attention;

  std::printf("\nkind %s, pass %s, B=1 H=%lld; %d round%s per point alternating ours and torch's, each warm-up 1 and "
              "%d reps; times = median of the rounds' medians; ratio = torch time / our time (above 1: we are faster), "
              "the median of the rounds' ratios, range = their smallest and largest; of peak = cpu.flash's forward "
              "flops per second over its dtype's peak, the best of the line above and of a remeasurement after each point%s\n",
              std::string(toString(o.kind)).c_str(), std::string(toString(o.pass)).c_str(),
              static_cast<long long>(o.heads), o.rounds, o.rounds == 1 ? "" : "s", o.reps,
              forwardAttention ? "" : " (forward attention only)");
  std::printf("%-5s %4s %-6s %6s | %9s %9s %6s %9s %7s | %9s %9s %6s | %10s %10s | %s\n", "dtype", "D", "mask", "seq",
              "cpu.flash", "torch fl", "ratio", "range", "of peak", "cpu.ref", "torch mth", "ratio", "flash peak",
              "predicted",
              forwardAttention ? "flash time: pack / QK^T / softmax / PV" : "flash time per phase");
  cpu::enableFlashProfile(true);
  for (DType dtype : o.dtypes)
    for (int64_t d : o.head_dims)
      for (const std::string& mask : o.masks)
        for (int64_t seq : o.seqs) {
          WorkloadSpec spec;
          spec.batch = 1;
          spec.heads = o.heads;
          spec.seq_q = seq;
          spec.head_dim = d;
          spec.dtype = dtype;
          spec.mask = *parseMask(mask).mask;
          spec.pass = o.pass;
          spec.kind = o.kind;
          const bool math = seq <= o.math_max_seq;
          cpu::takeFlashProfile();
          bench::TorchPeer* const p = peer ? &*peer : nullptr;
          const Paired fp = measure(flash, spec, p, "flash", o.reps, o.rounds);
          const cpu::FlashTimeShares shares = cpu::takeFlashProfile();
          const Paired rp = math ? measure(reference, spec, p, "math", o.reps, o.rounds) : Paired{};
          const RunResult &f = fp.run, &r = rp.run;
          const bool fok = fp.oursOk(), rok = math && rp.oursOk();
          // Forward attention: the flash profile's four parts; train and layer points: cpu.flash's
          // top-level phases from its trace (prepare's "inputs" left out).
          std::string parts;
          char one[96];
          if (forwardAttention && shares.total() > 0) {
            std::snprintf(one, sizeof one, "%4.1f%% / %4.1f%% / %4.1f%% / %4.1f%%",
                          100 * shares.pack_s / shares.total(), 100 * shares.scores_s / shares.total(),
                          100 * shares.softmax_s / shares.total(), 100 * shares.output_s / shares.total());
            parts = one;
          } else if (!forwardAttention && fok) {
            for (const PhaseStats& ph : summarizePhases(f.trace.events))
              if (ph.depth == 0 && ph.name != "inputs" && ph.share >= 0.005) {
                std::snprintf(one, sizeof one, "%s%s %.0f%%", parts.empty() ? "" : " / ", ph.name.c_str(), 100 * ph.share);
                parts += one;
              }
          }
          if (parts.empty()) parts = "-";
          char share[16] = "-";
          if (const double peak = forwardAttention && fok ? peakFor(dtype) : 0; peak > 0)
            std::snprintf(share, sizeof share, "%.0f %%", 100 * f.flopsPerSecond() * f.timing.median_s / fp.ours() / peak);
          std::printf("%-5s %4lld %-6s %6lld | %9s %9s %6s %9s %7s | %9s %9s %6s | %10s %10s | %s",
                      std::string(toString(dtype)).c_str(), static_cast<long long>(d), mask.c_str(),
                      static_cast<long long>(seq), cell(fok, fp.ours()).c_str(), cell(fp.peerOk(), fp.torch()).c_str(),
                      ratio(fp).c_str(), ratioRange(fp).c_str(), share, cell(rok, rp.ours()).c_str(),
                      cell(math && rp.peerOk(), rp.torch()).c_str(), ratio(rp).c_str(),
                      f.memory.measured_peak > 0 ? formatBytes(f.memory.measured_peak).c_str() : "-",
                      formatBytes(f.memory.predicted_peak).c_str(), parts.c_str());
          if (!fok) std::printf("  cpu.flash %s: %s", std::string(toString(f.status)).c_str(), f.message.c_str());
          if (peer && !fp.peerOk()) std::printf("  torch flash: %s", fp.peer.message.c_str());
          if (math && !rok) std::printf("  cpu.reference %s: %s", std::string(toString(r.status)).c_str(), r.message.c_str());
          if (math && peer && !rp.peerOk()) std::printf("  torch math: %s", rp.peer.message.c_str());
          if (fok && f.memory.measured_peak != f.memory.predicted_peak) std::printf("  (flash peak != plan)");
          if (rok && r.memory.measured_peak != r.memory.predicted_peak) std::printf("  (reference peak != plan)");
          std::printf("\n");
          std::fflush(stdout);
        }
  for (size_t i = 0; i < peaks.size(); ++i)
    if (peaks[i].flops_per_s > first[i].flops_per_s)
      std::printf("peak %s, best seen during the run: %d threads %s (%s at the start)\n", peaks[i].what.c_str(), hw,
                  formatFlops(peaks[i].flops_per_s).c_str(), formatFlops(first[i].flops_per_s).c_str());
  std::printf("load average at the end: %s\n", loadAverage().c_str());
  return 0;
}
