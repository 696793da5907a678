#include "bench/layer_products_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "core/backend/backend.h"
#include "core/backend/tracking_allocator.h"
#include "core/base/format.h"
#include "kernels/cpu/layer_products.h"

namespace attnscope::bench {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Bytes of `count` elements of dtype holding uniform values in [-1, 1).
std::vector<uint8_t> uniform(DType dtype, int64_t count, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint8_t> bytes(static_cast<size_t>(count * bytesPerElement(dtype)));
  for (int64_t i = 0; i < count; ++i) {
    const float x = dist(rng);
    if (dtype == DType::fp32)
      reinterpret_cast<float*>(bytes.data())[i] = x;
    else
      reinterpret_cast<uint16_t*>(bytes.data())[i] = dtype == DType::fp16 ? floatToHalf(x) : floatToBf16(x);
  }
  return bytes;
}

struct Product {
  const char* name;
  const char* torch_op;  // "linear", "nn", "tn" (TorchPeer::timeProduct)
  int64_t m, k, n;       // torch's shape: m x k by k x n
  std::function<void()> ours;
};

}  // namespace

void benchLayerProducts(const ProductsOptions& o, cpu::TaskPool& pool, TorchPeer* peer,
                        const std::function<double(DType)>& peak_for) {
  std::printf("\nthe layer's six train products alone, B=1 H=%lld (rows = seq, E = H x D, fused q, k, v width 3E); "
              "ours on the layer's layouts (q, k, v, o, dq, dk, dv as heads; weights packed inside, as in a run), "
              "torch's on contiguous rows; %d round%s alternating, each warm-up 1 and %d reps; times = median of the "
              "rounds' medians, ratio = torch / ours (median of the rounds' ratios), of peak = our rate over the "
              "dtype's peak\n",
              static_cast<long long>(o.heads), o.rounds, o.rounds == 1 ? "" : "s", o.reps);
  std::printf("%-5s %4s %6s | %-9s %-18s | %9s %11s | %9s %11s | %6s %7s\n", "dtype", "D", "rows", "product",
              "torch's shape", "ours", "rate", "torch", "rate", "ratio", "of peak");
  for (DType dtype : o.dtypes)
    for (int64_t d : o.head_dims)
      for (int64_t rows : o.seqs) {
        const int64_t H = o.heads, E = H * d, Q = 3 * E;
        std::mt19937 rng(11);
        auto x = uniform(dtype, rows * E, rng), w_qkv = uniform(dtype, Q * E, rng), b_qkv = uniform(dtype, Q, rng);
        auto w_o = uniform(dtype, E * E, rng), b_o = uniform(dtype, E, rng), g = uniform(dtype, rows * E, rng);
        auto q = uniform(dtype, rows * E, rng), k = uniform(dtype, rows * E, rng), v = uniform(dtype, rows * E, rng);
        auto o_heads = uniform(dtype, rows * E, rng), y = uniform(dtype, rows * E, rng), dx = y, d_o = y;
        auto dw_qkv = uniform(dtype, Q * E, rng), db_qkv = uniform(dtype, Q, rng), dw_o = uniform(dtype, E * E, rng);
        auto db_o = uniform(dtype, E, rng);
        const cpu::RowMatrix xm = cpu::RowMatrix::plain(dtype, x.data(), rows, E);
        const cpu::RowMatrix gm = cpu::RowMatrix::plain(dtype, g.data(), rows, E);
        const cpu::RowMatrix ym = cpu::RowMatrix::plain(dtype, y.data(), rows, E);
        const cpu::RowMatrix dxm = cpu::RowMatrix::plain(dtype, dx.data(), rows, E);
        cpu::RowMatrix qkv, om, dom;
        qkv.dtype = om.dtype = dom.dtype = dtype;
        qkv.rows_per_batch = om.rows_per_batch = dom.rows_per_batch = rows;
        qkv.parts = {{q.data(), H, d}, {k.data(), H, d}, {v.data(), H, d}};  // also dq, dk, dv for dx, dw_qkv
        om.parts = {{o_heads.data(), H, d}};
        dom.parts = {{d_o.data(), H, d}};
        HostAllocator alloc;
        RunContext ctx(alloc);
        const std::vector<Product> products = {
            {"qkv_proj", "linear", rows, E, Q,
             [&] { cpu::runRowProduct({&xm, w_qkv.data(), true, b_qkv.data(), &qkv, E, Q, "w_qkv^T", "qkv"}, rows, ctx, pool); }},
            {"out_proj", "linear", rows, E, E,
             [&] { cpu::runRowProduct({&om, w_o.data(), true, b_o.data(), &ym, E, E, "w_o^T", "out"}, rows, ctx, pool); }},
            {"dO", "nn", rows, E, E,
             [&] { cpu::runRowProduct({&gm, w_o.data(), false, nullptr, &dom, E, E, "w_o", "dO"}, rows, ctx, pool); }},
            {"dw_o", "tn", E, rows, E,
             [&] { cpu::runWeightGradient({&gm, &om, dw_o.data(), db_o.data(), dtype, "dw_o sums", "o"}, rows, ctx, pool); }},
            {"dx", "nn", rows, Q, E,
             [&] { cpu::runRowProduct({&qkv, w_qkv.data(), false, nullptr, &dxm, Q, E, "w_qkv", "dx"}, rows, ctx, pool); }},
            {"dw_qkv", "tn", Q, rows, E,
             [&] { cpu::runWeightGradient({&qkv, &xm, dw_qkv.data(), db_qkv.data(), dtype, "dw_qkv sums", "x"}, rows, ctx,
                                          pool); }},
        };
        const double peak = peak_for(dtype);
        for (const Product& p : products) {
          std::vector<double> ours_s, torch_s, ratios;
          std::string torch_error;
          for (int r = 0; r < o.rounds; ++r) {
            double t_torch = 0;
            auto runTorch = [&] {
              if (!peer || !torch_error.empty()) return;
              const PeerTiming t = peer->timeProduct(p.torch_op, dtype, p.m, p.k, p.n, 1, o.reps);
              if (!t.ok) torch_error = t.message;
              else torch_s.push_back(t_torch = t.median_s);
            };
            if (r % 2) runTorch();
            // Warm-up: at least one call and 50 ms of them (the peer does the same): a 1.5 ms product
            // timed right after the machine sat idle ran up to twice as slow on a Zen 4 VM.
            const auto warm_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
            do p.ours();
            while (std::chrono::steady_clock::now() < warm_end);
            std::vector<double> times;
            for (int i = 0; i < o.reps; ++i) {
              const auto t0 = std::chrono::steady_clock::now();
              p.ours();
              times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            const double t_ours = median(times);
            ours_s.push_back(t_ours);
            if (r % 2 == 0) runTorch();
            if (t_torch > 0) ratios.push_back(t_torch / t_ours);
          }
          const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.k) * static_cast<double>(p.n);
          const double ours = median(ours_s), torch = median(torch_s);
          char shape[32], ratio[16] = "-", share[16] = "-";
          std::snprintf(shape, sizeof shape, "%s %lldx%lldx%lld", p.torch_op, static_cast<long long>(p.m),
                        static_cast<long long>(p.k), static_cast<long long>(p.n));
          if (!ratios.empty()) std::snprintf(ratio, sizeof ratio, "%.2fx", median(ratios));
          if (peak > 0) std::snprintf(share, sizeof share, "%.0f %%", 100 * flops / ours / peak);
          std::printf("%-5s %4lld %6lld | %-9s %-18s | %9s %11s | %9s %11s | %6s %7s", std::string(toString(dtype)).c_str(),
                      static_cast<long long>(d), static_cast<long long>(rows), p.name, shape, formatDuration(ours).c_str(),
                      formatFlops(flops / ours).c_str(), torch_s.empty() ? "-" : formatDuration(torch).c_str(),
                      torch_s.empty() ? "-" : formatFlops(flops / torch).c_str(), ratio, share);
          if (!torch_error.empty()) std::printf("  torch: %s", torch_error.c_str());
          std::printf("\n");
          std::fflush(stdout);
        }
      }
}

}  // namespace attnscope::bench
