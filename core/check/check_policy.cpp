#include "core/check/check_policy.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/check/check_sample.h"
#include "core/inputs/host_inputs.h"

namespace attnscope {

int checkThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

double fullCheckProducts(const WorkloadSpec& s) {
  const double pairs = static_cast<double>(s.batch) * static_cast<double>(s.heads) * visiblePairsPerHead(s);
  const double D = static_cast<double>(s.headDim());
  const bool train = s.pass == Pass::train;
  // The output: a score and a weighted value row per visible pair. The gradients: each row's
  // scores and G.V again, dQ, and per key the scores, G.V, dK and dV (core/check/reference_grad.cpp).
  double products = pairs * D * (train ? 2 + 3 + 4 : 2);
  if (s.kind == WorkloadKind::layer) {
    const double R = static_cast<double>(s.batch * s.seq_q), E = static_cast<double>(layerWidth(s)),
                 Ht = static_cast<double>(layerQkvRows(s)), HD = static_cast<double>(s.heads * s.headDim());
    products += R * E * Ht + R * HD * E;  // q/k/v, y
    // dO, dw_o; dw_qkv, dx: counted twice, as they ran at about half the rate of the others
    // (strided weights, head-split accessors; docs/ARCHITECTURE.md, "Accuracy").
    if (train) products += 2 * (2 * R * E * HD + 2 * R * Ht * E);
  }
  return products;
}

CheckDepth resolveCheck(const WorkloadSpec& s, CheckMode mode, double run_seconds, int threads) {
  if (mode == CheckMode::full) return CheckDepth::every_row;
  if (mode != CheckMode::automatic) return CheckDepth::sampled;
  const double products = fullCheckProducts(s);
  if (products <= kAlwaysFullProducts) return CheckDepth::every_row;
  const double seconds = products / (kCheckProductsPerSecond * std::max(1, threads));
  return seconds <= kFullCheckShare * run_seconds ? CheckDepth::every_row : CheckDepth::sampled;
}

}  // namespace attnscope
