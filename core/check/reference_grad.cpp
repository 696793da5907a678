#include "core/check/reference_grad.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "core/check/check_sample.h"
#include "core/check/error_tally.h"
#include "core/spec/dtype.h"
#include "core/check/reference.h"
#include "core/check/reference_kernels.h"

namespace attnscope {
namespace {

std::vector<double> doubles(const HostTensor& t, int64_t first, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t e = 0; e < n; ++e) out[static_cast<size_t>(e)] = t.at(first + e);
  return out;
}

// One (batch, KV head) in float64: its K and V, and one query head's Q and G at a time.
class GradReference {
 public:
  GradReference(const WorkloadSpec& s, const HostInputs& in, const std::atomic<bool>* cancel)
      : s_(s), in_(in), cancel_(cancel), H_(s.heads), Hkv_(s.kvHeads()), Lq_(s.seq_q), Lkv_(s.seqKv()),
        D_(s.headDim()), group_(H_ / Hkv_), scale_(s.effectiveScale()) {}

  void checkCancel() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
  }
  void loadKv(int64_t b, int64_t kvh) {
    k_ = doubles(in_.k, (b * Hkv_ + kvh) * Lkv_ * D_, Lkv_ * D_);
    v_ = doubles(in_.v, (b * Hkv_ + kvh) * Lkv_ * D_, Lkv_ * D_);
    b_ = b;
  }
  void loadQuery(int64_t h) {
    q_ = doubles(in_.q, (b_ * H_ + h) * Lq_ * D_, Lq_ * D_);
    g_ = doubles(in_.g, (b_ * H_ + h) * Lq_ * D_, Lq_ * D_);
    h_ = h;
  }

  // lse (-inf when no key is visible) and delta of every row of the loaded query head, and dQ of
  // the rows `dq_rows` (query indices, sorted) into dq (dq_rows.size() x D).
  void rowStats(bool every_row, const std::vector<int64_t>& dq_rows, std::vector<double>& dq) {
    lse_.assign(static_cast<size_t>(Lq_), -INFINITY);
    delta_.assign(static_cast<size_t>(Lq_), 0.0);
    dq.assign(dq_rows.size() * static_cast<size_t>(D_), 0.0);
    const int64_t n = every_row ? Lq_ : static_cast<int64_t>(dq_rows.size());
    parallelSlices(n, 3.0 * static_cast<double>(Lkv_ * D_), [&](int64_t begin, int64_t end) {
      std::vector<double> sc(static_cast<size_t>(Lkv_)), gv(static_cast<size_t>(Lkv_));
      std::vector<char> vis(static_cast<size_t>(Lkv_));
      auto at = dq_rows.begin();
      for (int64_t t = begin; t < end; ++t) {
        checkCancel();
        const int64_t i = every_row ? t : dq_rows[static_cast<size_t>(t)];
        at = std::lower_bound(at, dq_rows.end(), i);
        double* dqRow = at != dq_rows.end() && *at == i ? dq.data() + (at - dq_rows.begin()) * D_ : nullptr;
        row(i, sc, gv, vis, dqRow);
      }
    });
  }

  // Adds the loaded query head's share of dK and dV rows `keys` (keys.size() x D each).
  void addKeys(const std::vector<int64_t>& keys, std::vector<double>& dk, std::vector<double>& dv) {
    parallelSlices(static_cast<int64_t>(keys.size()), 4.0 * static_cast<double>(Lq_ * D_), [&](int64_t begin, int64_t end) {
      std::vector<double> sc(static_cast<size_t>(Lq_)), gv(static_cast<size_t>(Lq_));
      for (int64_t n = begin; n < end; ++n) {
        checkCancel();
        const int64_t j = keys[static_cast<size_t>(n)];
        const IndexRange rows = rowsSeeing(s_.mask, j, Lq_, Lkv_);
        if (rows.empty()) continue;
        dotRows(k_.data() + j * D_, q_.data(), D_, rows.lo, rows.hi, sc.data());
        dotRows(v_.data() + j * D_, g_.data(), D_, rows.lo, rows.hi, gv.data());
        double* dkRow = dk.data() + n * D_;
        double* dvRow = dv.data() + n * D_;
        for (int64_t i = rows.lo; i <= rows.hi; ++i) {
          if (std::isinf(lse_[i]) || !attends(i, j)) continue;
          const double p = std::exp(scale_ * sc[i] + bias(i, j) - lse_[i]);
          const double ds = p * (gv[i] - delta_[i]);
          for (int64_t d = 0; d < D_; ++d) {
            dkRow[d] += scale_ * ds * q_[i * D_ + d];
            dvRow[d] += p * g_[i * D_ + d];
          }
        }
      }
    });
  }

 private:
  int64_t maskAt(int64_t i, int64_t j) const {
    return s_.mask_layout == MaskLayout::per_head ? ((b_ * H_ + h_) * Lq_ + i) * Lkv_ + j : i * Lkv_ + j;
  }
  bool attends(int64_t i, int64_t j) const {
    if (!referenceAttends(s_.mask, i, j, Lq_, Lkv_)) return false;
    if (s_.mask.kind == MaskKind::dense) return in_.mask[static_cast<size_t>(maskAt(i, j))] != 0;
    if (s_.mask.kind == MaskKind::additive) return in_.additive_mask.at(maskAt(i, j)) != -INFINITY;
    return true;
  }
  // An additive mask's bias on the scaled score (0 for every other mask; only asked where attends).
  double bias(int64_t i, int64_t j) const {
    return s_.mask.kind == MaskKind::additive ? static_cast<double>(in_.additive_mask.at(maskAt(i, j))) : 0.0;
  }

  // Row i's scores and G.V once, then lse, delta and (when asked) dQ from them.
  void row(int64_t i, std::vector<double>& sc, std::vector<double>& gv, std::vector<char>& vis, double* dq) {
    const IndexRange keys = keysSeenBy(s_.mask, i, Lq_, Lkv_);
    if (keys.empty()) return;
    dotRows(q_.data() + i * D_, k_.data(), D_, keys.lo, keys.hi, sc.data());
    dotRows(g_.data() + i * D_, v_.data(), D_, keys.lo, keys.hi, gv.data());
    double mx = -INFINITY;
    bool any = false;
    for (int64_t j = keys.lo; j <= keys.hi; ++j) {
      vis[j] = attends(i, j);
      if (!vis[j]) continue;
      sc[j] = sc[j] * scale_ + bias(i, j);
      if (!any || std::isnan(sc[j]) || sc[j] > mx) mx = sc[j];
      any = true;
    }
    if (!any) return;
    double sum = 0;
    for (int64_t j = keys.lo; j <= keys.hi; ++j)
      if (vis[j]) sum += std::exp(sc[j] - mx);
    const double lse = mx + std::log(sum);
    double delta = 0;
    for (int64_t j = keys.lo; j <= keys.hi; ++j)
      if (vis[j]) delta += std::exp(sc[j] - lse) * gv[j];
    lse_[i] = lse;
    delta_[i] = delta;
    if (!dq) return;
    for (int64_t j = keys.lo; j <= keys.hi; ++j) {
      if (!vis[j]) continue;
      const double ds = std::exp(sc[j] - lse) * (gv[j] - delta);
      for (int64_t d = 0; d < D_; ++d) dq[d] += scale_ * ds * k_[j * D_ + d];
    }
  }

  const WorkloadSpec& s_;
  const HostInputs& in_;
  const std::atomic<bool>* cancel_;
  const int64_t H_, Hkv_, Lq_, Lkv_, D_, group_;
  const double scale_;
  int64_t b_ = 0, h_ = 0;
  std::vector<double> k_, v_, q_, g_, lse_, delta_;
};

// The largest row norm of each (batch, KV head) of a [B, heads, L, D] tensor, folded onto the KV
// heads (query head h belongs to KV head h / group).
std::vector<double> perKvHead(const WorkloadSpec& s, const HostTensor& t, int64_t heads, int64_t L) {
  const std::vector<double> largest = largestNorms(rowNorms(t, s.headDim()), L);
  const int64_t group = heads / s.kvHeads();
  std::vector<double> out(static_cast<size_t>(s.batch * s.kvHeads()), 0.0);
  for (int64_t bh = 0; bh < static_cast<int64_t>(largest.size()); ++bh) {
    double& o = out[static_cast<size_t>(bh / heads * s.kvHeads() + bh % heads / group)];
    if (!(largest[static_cast<size_t>(bh)] <= o)) o = largest[static_cast<size_t>(bh)];
  }
  return out;
}

// What the sampled dK/dV check picks heads and keys by: the largest |q| and |k| of each KV head.
struct KvNorms {
  std::vector<double> q, k;
};

// The (batch, KV head) indices whose dK and dV are checked.
std::vector<int64_t> checkedKvHeads(const WorkloadSpec& s, const HostInputs& in, const KvNorms& norms, double headCost) {
  const int64_t kvHeads = s.batch * s.kvHeads();
  CheckSample heads(1, kvHeads, s.seed, 0x6b7668ull);
  for (const auto& largest : {norms.q, perKvHead(s, in.g, s.heads, s.seq_q), norms.k, perKvHead(s, in.v, s.kvHeads(), s.seqKv())})
    heads.largest(largest);
  const double scale = std::fabs(s.effectiveScale());
  for (int64_t x = 0; x < kvHeads; ++x)
    if (scoresAtRisk(scale * norms.q[static_cast<size_t>(x)] * norms.k[static_cast<size_t>(x)], s.dtype)) heads.add(x);
  heads.seeded(static_cast<int64_t>(static_cast<double>(kAccuracyBudget) / headCost));
  return heads.sorted();
}

// Key rows of KV head x = b * Hkv + kvh to check: every key (norms null, or all fit), else a
// sampled check's keys.
// kept: keptByMaskTensor's bits, read once for every KV head.
std::vector<int64_t> checkedKeys(const WorkloadSpec& s, const HostInputs& in, const std::vector<uint8_t>& kept,
                                 const KvNorms* norms, int64_t x, int64_t budget) {
  const int64_t Lkv = s.seqKv(), Lq = s.seq_q, D = s.headDim(), group = s.heads / s.kvHeads();
  const int64_t n = std::clamp<int64_t>(budget / std::max<int64_t>(1, group * Lq * D * 4), 2, kAccuracySamples);
  CheckSample keys(1, Lkv, s.seed ^ static_cast<uint64_t>(x), 0x6b6579ull);
  if (!norms || n >= Lkv) {
    keys.all();
    return keys.sorted();
  }
  keys.everyBlock();
  keys.inGroup(0, maskEdges(s, true));
  if (!kept.empty())
    keys.inGroup(0, denseMaskEdges(s, kept, s.mask_layout == MaskLayout::per_head ? x / s.kvHeads() * s.heads + x % s.kvHeads() * group : 0, true));
  const std::vector<double> k = rowNorms(in.k, D, x * Lkv, Lkv);
  keys.largest(k);
  keys.largest(rowNorms(in.v, D, x * Lkv, Lkv));
  const double qmax = norms->q[static_cast<size_t>(x)], scale = std::fabs(s.effectiveScale());
  for (int64_t j = 0; j < Lkv; ++j)
    if (scoresAtRisk(scale * qmax * std::sqrt(k[static_cast<size_t>(j)]), s.dtype)) keys.add(j);
  keys.seeded(n);
  return keys.sorted();
}

}  // namespace

int64_t trainIoBytes(const WorkloadSpec& s) {
  if (s.pass != Pass::train) return 0;
  return (2 * s.qElements() + 2 * s.kvElements()) * bytesPerElement(s.dtype);
}

Accuracy checkGradients(const WorkloadSpec& s, const HostInputs& in, const AttentionGradients& grads,
                        const std::atomic<bool>* cancel, std::string* problemOut, CheckDepth depth) {
  Accuracy a;
  a.checked = true;
  a.tolerance = toleranceFor(s.dtype);
  const int64_t H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const int64_t group = H / Hkv;
  auto fail = [&](const std::string& why) {
    a.max_abs_error = a.rel_l2_error = INFINITY;
    if (problemOut) *problemOut = why;
    return a;
  };
  if (static_cast<int64_t>(grads.dq.size()) != s.qElements()) return fail("dq has " + std::to_string(grads.dq.size()) + " values, expected " + std::to_string(s.qElements()));
  if (static_cast<int64_t>(grads.dk.size()) != s.kvElements() || static_cast<int64_t>(grads.dv.size()) != s.kvElements())
    return fail("dk/dv have " + std::to_string(grads.dk.size()) + "/" + std::to_string(grads.dv.size()) +
                " values, expected " + std::to_string(s.kvElements()));
  if (in.g.elements() != s.qElements()) return fail("the inputs hold no output gradient G");
  // A NaN or Inf fails wherever it is, sampled or not.
  for (auto [t, name] : {std::pair{&grads.dq, "dq"}, std::pair{&grads.dk, "dk"}, std::pair{&grads.dv, "dv"}})
    if (const int64_t at = firstNonFinite(*t); at >= 0)
      return fail(std::string(name) + " row " + std::to_string(at / D) + " element " + std::to_string(at % D) + " is " +
                  std::to_string((*t)[static_cast<size_t>(at)]));

  GradReference ref(s, in, cancel);
  ErrorTally dq("dq"), dk("dk"), dv("dv");
  const std::vector<int64_t> rows = accuracyRows(s, in, depth, kAccuracyBudget / 3, &in.g);
  // Each checked KV head costs a float64 forward over its group (about 2 group Lq Lkv D).
  const double headCost = std::max(1.0, static_cast<double>(group) * visiblePairsPerHead(s) * static_cast<double>(D) * 2);
  // Every KV head while they all fit the budget; otherwise the heads that matter.
  std::optional<KvNorms> norms;
  std::vector<int64_t> heads;
  if (depth == CheckDepth::every_row || static_cast<double>(s.batch * Hkv) * headCost <= static_cast<double>(kAccuracyBudget)) {
    for (int64_t x = 0; x < s.batch * Hkv; ++x) heads.push_back(x);
  } else {
    norms = KvNorms{perKvHead(s, in.q, H, Lq), perKvHead(s, in.k, Hkv, Lkv)};
    heads = checkedKvHeads(s, in, *norms, headCost);
  }
  const int64_t keyBudget = kAccuracyBudget / static_cast<int64_t>(std::max<size_t>(1, heads.size()));
  std::vector<uint8_t> scratch;
  const std::vector<uint8_t>& kept = keptByMaskTensor(s, in, scratch);
  a.rows_checked = static_cast<int64_t>(rows.size());
  auto row = rows.begin();
  auto checkedHead = heads.begin();
  std::vector<double> dqWant;
  for (int64_t x = 0; x < s.batch * Hkv; ++x) {
    ref.checkCancel();
    const int64_t b = x / Hkv, kvh = x % Hkv;
    const bool kv = checkedHead != heads.end() && *checkedHead == x;
    if (kv) ++checkedHead;
    const int64_t firstRow = (b * H + kvh * group) * Lq, endRow = firstRow + group * Lq;
    const auto rowsEnd = std::lower_bound(row, rows.end(), endRow);
    if (!kv && row == rowsEnd) continue;
    const std::vector<int64_t> keys =
        kv ? checkedKeys(s, in, kept, norms ? &*norms : nullptr, x, keyBudget) : std::vector<int64_t>{};
    std::vector<double> wantK(keys.size() * static_cast<size_t>(D), 0.0), wantV(wantK.size(), 0.0);
    ref.loadKv(b, kvh);
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = kvh * group + g, headFirst = firstRow + g * Lq;
      std::vector<int64_t> dqRows;
      for (; row != rowsEnd && *row < headFirst + Lq; ++row) dqRows.push_back(*row - headFirst);
      if (!kv && dqRows.empty()) continue;
      ref.loadQuery(h);
      ref.rowStats(kv, dqRows, dqWant);
      for (size_t n = 0; n < dqRows.size(); ++n)
        for (int64_t d = 0; d < D; ++d)
          dq.add(dqWant[n * static_cast<size_t>(D) + d], grads.dq[static_cast<size_t>((headFirst + dqRows[n]) * D + d)],
                 {headFirst + dqRows[n], d});
      if (kv) ref.addKeys(keys, wantK, wantV);
    }
    for (size_t n = 0; n < keys.size(); ++n)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t at = (x * Lkv + keys[n]) * D + d;
        dk.add(wantK[n * D + d], grads.dk[static_cast<size_t>(at)], {x * Lkv + keys[n], d});
        dv.add(wantV[n * D + d], grads.dv[static_cast<size_t>(at)], {x * Lkv + keys[n], d});
      }
    a.rows_checked += 2 * static_cast<int64_t>(keys.size());
  }
  a.rows_total = s.batch * H * Lq + 2 * s.batch * Hkv * Lkv;
  std::string problem;
  double err2 = 0, ref2 = 0;
  for (const ErrorTally* t : {&dq, &dk, &dv}) {
    const double e = t->normalised();
    if (!(e <= a.max_abs_error)) a.max_abs_error = e;
    err2 += t->err2;
    ref2 += t->ref2;
    std::ostringstream os;
    if (problem.empty() && t->any_nonfinite)
      os << (std::isfinite(t->nonfinite_want) ? t->name : "reference") << " " << toString(t->nonfinite) << " is "
         << (std::isfinite(t->nonfinite_want) ? t->nonfinite_got : t->nonfinite_want);
    else if (problem.empty() && !(e <= a.tolerance))
      os << t->name << " error " << e << " (max abs " << t->max_err << " at " << toString(t->worst)
         << ", largest |reference| " << t->max_ref << ") > tolerance " << a.tolerance;
    if (problem.empty()) problem = os.str();
  }
  a.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (problemOut) *problemOut = problem;
  return a;
}

}  // namespace attnscope
