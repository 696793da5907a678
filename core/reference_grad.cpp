#include "core/reference_grad.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/dtype.h"
#include "core/random.h"
#include "core/reference.h"

namespace attnscope {
namespace {

// Max abs error of one gradient tensor, normalised by max(1, its largest reference magnitude).
struct TensorError {
  explicit TensorError(const char* n) : name(n) {}
  const char* name;
  double max_err = 0, max_ref = 0, err2 = 0, ref2 = 0;
  std::string problem;

  void add(double want, double got, const std::string& where) {
    double e = std::fabs(got - want);
    if (!std::isfinite(want) || !std::isfinite(got)) {
      e = INFINITY;
      if (problem.empty()) {
        std::ostringstream os;
        os << (std::isfinite(want) ? name : "reference") << ' ' << where << " is " << (std::isfinite(want) ? got : want);
        problem = os.str();
      }
    } else {
      max_ref = std::max(max_ref, std::fabs(want));
      ref2 += want * want;
    }
    if (!(e <= max_err)) max_err = e;  // keeps a NaN
    err2 += e * e;
  }
  double normalised() const { return max_err / std::max(1.0, max_ref); }
};

// One (batch, KV head) at a time in float64: K and V of the KV head, Q and G of one query head.
class GradReference {
 public:
  GradReference(const WorkloadSpec& s, const HostInputs& in, const std::atomic<bool>* cancel)
      : s_(s), in_(in), cancel_(cancel), H_(s.heads), Hkv_(s.kvHeads()), Lq_(s.seq_q), Lkv_(s.seqKv()),
        D_(s.headDim()), group_(H_ / Hkv_), scale_(s.effectiveScale()) {}

  int64_t group() const { return group_; }
  void checkCancel() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
  }

  void loadKv(int64_t b, int64_t kvh) {
    if (b == kv_b_ && kvh == kv_h_) return;
    load(in_.k, (b * Hkv_ + kvh) * Lkv_ * D_, Lkv_ * D_, k_);
    load(in_.v, (b * Hkv_ + kvh) * Lkv_ * D_, Lkv_ * D_, v_);
    kv_b_ = b;
    kv_h_ = kvh;
  }
  void loadQuery(int64_t b, int64_t h) {
    if (b == q_b_ && h == q_h_) return;
    load(in_.q, (b * H_ + h) * Lq_ * D_, Lq_ * D_, q_);
    load(in_.g, (b * H_ + h) * Lq_ * D_, Lq_ * D_, g_);
    q_b_ = b;
    q_h_ = h;
  }

  bool attends(int64_t i, int64_t j) const {
    if (!referenceAttends(s_.mask, i, j, Lq_, Lkv_)) return false;
    if (s_.mask.kind != MaskKind::dense) return true;
    const int64_t at = s_.mask_layout == MaskLayout::per_head ? ((q_b_ * H_ + q_h_) * Lq_ + i) * Lkv_ + j : i * Lkv_ + j;
    return in_.mask[static_cast<size_t>(at)] != 0;
  }
  double dot(const std::vector<double>& a, int64_t i, const std::vector<double>& b, int64_t j) const {
    double acc = 0;
    for (int64_t d = 0; d < D_; ++d) acc += a[i * D_ + d] * b[j * D_ + d];
    return acc;
  }
  double score(int64_t i, int64_t j) const { return scale_ * dot(q_, i, k_, j); }

  // Row i of the loaded query head: lse (-inf when no key is visible), P_ij via prob(), delta_i.
  struct RowStats {
    double lse = -INFINITY, delta = 0;
  };
  RowStats rowStats(int64_t i) const {
    RowStats r;
    double mx = -INFINITY;
    bool any = false;
    for (int64_t j = 0; j < Lkv_; ++j)
      if (attends(i, j)) {
        const double sc = score(i, j);
        if (!any || std::isnan(sc) || sc > mx) mx = sc;
        any = true;
      }
    if (!any) return r;
    double sum = 0;
    for (int64_t j = 0; j < Lkv_; ++j)
      if (attends(i, j)) sum += std::exp(score(i, j) - mx);
    r.lse = mx + std::log(sum);
    for (int64_t j = 0; j < Lkv_; ++j)
      if (attends(i, j)) r.delta += std::exp(score(i, j) - r.lse) * dot(g_, i, v_, j);
    return r;
  }
  double prob(int64_t i, int64_t j, const RowStats& st) const {
    return std::isinf(st.lse) || !attends(i, j) ? 0.0 : std::exp(score(i, j) - st.lse);
  }

  // dQ row i of the loaded head.
  void dqRow(int64_t i, std::vector<double>& out) const {
    out.assign(static_cast<size_t>(D_), 0.0);
    const RowStats st = rowStats(i);
    for (int64_t j = 0; j < Lkv_; ++j) {
      const double p = prob(i, j, st);
      if (p == 0.0) continue;
      const double ds = p * (dot(g_, i, v_, j) - st.delta);
      for (int64_t d = 0; d < D_; ++d) out[d] += scale_ * ds * k_[j * D_ + d];
    }
  }

  // Adds the loaded query head's share of dK and dV rows `keys` (keys.size() x D each).
  void addKvRows(const std::vector<int64_t>& keys, std::vector<double>& dk, std::vector<double>& dv) {
    std::vector<RowStats> stats(static_cast<size_t>(Lq_));
    for (int64_t i = 0; i < Lq_; ++i) {
      if ((i & 63) == 0) checkCancel();
      stats[i] = rowStats(i);
    }
    for (size_t n = 0; n < keys.size(); ++n) {
      checkCancel();
      const int64_t j = keys[n];
      for (int64_t i = 0; i < Lq_; ++i) {
        const double p = prob(i, j, stats[i]);
        if (p == 0.0) continue;
        const double ds = p * (dot(g_, i, v_, j) - stats[i].delta);
        for (int64_t d = 0; d < D_; ++d) {
          dk[n * D_ + d] += scale_ * ds * q_[i * D_ + d];
          dv[n * D_ + d] += p * g_[i * D_ + d];
        }
      }
    }
  }

 private:
  static void load(const HostTensor& t, int64_t first, int64_t n, std::vector<double>& out) {
    out.resize(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) out[e] = t.at(first + e);
  }

  const WorkloadSpec& s_;
  const HostInputs& in_;
  const std::atomic<bool>* cancel_;
  const int64_t H_, Hkv_, Lq_, Lkv_, D_, group_;
  const double scale_;
  int64_t kv_b_ = -1, kv_h_ = -1, q_b_ = -1, q_h_ = -1;
  std::vector<double> k_, v_, q_, g_;
};

// Key rows of one KV head to check: all when they fit the budget, else sampled (first and last
// always in).
std::vector<int64_t> keyRows(const WorkloadSpec& s, int64_t budget) {
  const int64_t Lkv = s.seqKv();
  const int64_t perRow = std::max<int64_t>(1, (s.heads / s.kvHeads()) * s.seq_q * s.headDim() * 3);
  const int64_t n = std::clamp<int64_t>(budget / perRow, 2, kAccuracySamples);
  std::vector<int64_t> rows;
  if (n >= Lkv) {
    for (int64_t j = 0; j < Lkv; ++j) rows.push_back(j);
    return rows;
  }
  std::set<int64_t> chosen{0, Lkv - 1};
  for (uint64_t k = 0; static_cast<int64_t>(chosen.size()) < n; ++k)
    chosen.insert(static_cast<int64_t>(randomBits(s.seed ^ 0x6b6579ull, RandomStream::sample, k) % static_cast<uint64_t>(Lkv)));
  return {chosen.begin(), chosen.end()};
}

}  // namespace

int64_t trainIoBytes(const WorkloadSpec& s) {
  if (s.pass != Pass::train) return 0;
  return (2 * s.qElements() + 2 * s.kvElements()) * bytesPerElement(s.dtype);
}

Accuracy checkGradients(const WorkloadSpec& s, const HostInputs& in, const AttentionGradients& grads,
                        const std::atomic<bool>* cancel, std::string* problemOut) {
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

  GradReference ref(s, in, cancel);
  TensorError dq("dq"), dk("dk"), dv("dv");
  std::vector<double> row;
  const std::vector<int64_t> rows = accuracyRows(s, kAccuracyBudget / 3);
  for (const int64_t r : rows) {
    ref.checkCancel();
    const int64_t i = r % Lq, bh = r / Lq, b = bh / H, h = bh % H;
    ref.loadKv(b, h / group);
    ref.loadQuery(b, h);
    ref.dqRow(i, row);
    for (int64_t d = 0; d < D; ++d)
      dq.add(row[d], grads.dq[static_cast<size_t>(r * D + d)], "row " + std::to_string(r) + " element " + std::to_string(d));
  }
  // Each checked KV head costs a float64 forward over its group (about 2 group Lq Lkv D).
  const int64_t headCost = std::max<int64_t>(1, group * Lq * Lkv * D * 2);
  const int64_t kvHeads = s.batch * Hkv;
  std::vector<int64_t> heads;
  if (kvHeads * headCost <= kAccuracyBudget)
    for (int64_t x = 0; x < kvHeads; ++x) heads.push_back(x);
  else
    heads = kvHeads > 1 ? std::vector<int64_t>{0, kvHeads - 1} : std::vector<int64_t>{0};
  const std::vector<int64_t> keys = keyRows(s, kAccuracyBudget / static_cast<int64_t>(heads.size()));
  for (const int64_t x : heads) {
    const int64_t b = x / Hkv, kvh = x % Hkv;
    std::vector<double> wantK(keys.size() * static_cast<size_t>(D), 0.0), wantV(wantK.size(), 0.0);
    ref.loadKv(b, kvh);
    for (int64_t g = 0; g < group; ++g) {
      ref.loadQuery(b, kvh * group + g);
      ref.addKvRows(keys, wantK, wantV);
    }
    for (size_t n = 0; n < keys.size(); ++n)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t at = (x * Lkv + keys[n]) * D + d;
        const std::string where = "row " + std::to_string(x * Lkv + keys[n]) + " element " + std::to_string(d);
        dk.add(wantK[n * D + d], grads.dk[static_cast<size_t>(at)], where);
        dv.add(wantV[n * D + d], grads.dv[static_cast<size_t>(at)], where);
      }
  }
  a.rows_checked = static_cast<int64_t>(rows.size() + 2 * heads.size() * keys.size());
  a.rows_total = s.batch * H * Lq + 2 * kvHeads * Lkv;
  std::string problem;
  double err2 = 0, ref2 = 0;
  for (const TensorError* t : {&dq, &dk, &dv}) {
    const double e = t->normalised();
    if (!(e <= a.max_abs_error)) a.max_abs_error = e;
    err2 += t->err2;
    ref2 += t->ref2;
    if (problem.empty() && !t->problem.empty()) problem = t->problem;
    if (problem.empty() && !(e <= a.tolerance)) {
      std::ostringstream os;
      os << t->name << " error " << e << " (max abs " << t->max_err << ", largest |reference| " << t->max_ref << ") > tolerance "
         << a.tolerance;
      problem = os.str();
    }
  }
  a.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (problemOut) *problemOut = problem;
  return a;
}

}  // namespace attnscope
