#include "core/check/reference_layer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/check/check_sample.h"
#include "core/check/error_tally.h"
#include "core/check/reference_kernels.h"
#include "core/check/reference.h"
#include "core/check/reference_grad.h"

namespace attnscope {
namespace {

// A tensor stored in the spec's dtype as float, read once.
std::vector<float> floats(const HostTensor& t) {
  std::vector<float> out(t.bytes.empty() ? 0 : static_cast<size_t>(t.elements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = t.at(static_cast<int64_t>(i));
  return out;
}

// Every index below groups x per_group when `depth` is every_row or they fit, else a sampled
// check's: an index of every block of kCheckBlock of every group (every batch, every head's
// slice of w_qkv), the largest `norm` of every group and overall, and seeded ones.
template <class Norm>
std::vector<int64_t> sample(const WorkloadSpec& s, CheckDepth depth, int64_t groups, int64_t per_group, int64_t cost_per,
                            uint64_t salt, Norm norm) {
  const int64_t total = groups * per_group;
  const int64_t affordable = std::max<int64_t>(2, kAccuracyBudget / std::max<int64_t>(1, cost_per));
  const int64_t n = std::min({kAccuracySamples, affordable, total});
  CheckSample cs(groups, per_group, s.seed, salt);
  if (depth == CheckDepth::every_row || (total <= kAccuracyAllRows && total <= affordable) || n >= total) {
    cs.all();
    return cs.sorted();
  }
  cs.everyBlock();
  std::vector<double> norms(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) norms[static_cast<size_t>(i)] = norm(i);
  cs.largest(norms);
  cs.seeded(n);
  return cs.sorted();
}

// The layer's shapes, and the head-split tensors read as matrices of R = B L rows: column c of
// the fused q|k|v (or dq|dk|dv) matrix, and of the merged o (or dO).
struct Layout {
  int64_t B, H, Hkv, L, D, E, R, Ht, HD;
  explicit Layout(const WorkloadSpec& s)
      : B(s.batch), H(s.heads), Hkv(s.kvHeads()), L(s.seq_q), D(s.headDim()), E(layerWidth(s)), R(B * L),
        Ht(layerQkvRows(s)), HD(H * D) {}
  // Index into [B, heads, L, D] of (row p, column c within that tensor).
  int64_t split(int64_t p, int64_t c, int64_t heads) const { return ((p / L * heads + c / D) * L + p % L) * D + c % D; }
  double fused(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int64_t p,
               int64_t c) const {
    if (c < HD) return q[static_cast<size_t>(split(p, c, H))];
    c -= HD;
    if (c < Hkv * D) return k[static_cast<size_t>(split(p, c, Hkv))];
    return v[static_cast<size_t>(split(p, c - Hkv * D, Hkv))];
  }
};

class Checker {
 public:
  Checker(const WorkloadSpec& s, const std::atomic<bool>* cancel) : z_(s), cancel_(cancel) {}

  void poll() const {
    if (cancel_ && cancel_->load(std::memory_order_relaxed)) throw Cancelled();
  }
  // out = bias + a_row . w (w row-major with `ld`; transposed: column j is row j of w).
  // Positions p: out(p, j) = b[j] + sum_c in(p, c) w(j, c), compared with got(p, j). Computed
  // kBatch positions at a time on the check's threads, compared in order.
  template <class In, class W, class Got>
  void rows(ErrorTally& t, const std::vector<int64_t>& ps, int64_t n_in, int64_t n_out, In in, W w,
            const std::vector<float>* bias, Got got) {
    std::vector<double> want;
    for (size_t first = 0; first < ps.size(); first += kBatch) {
      const int64_t count = static_cast<int64_t>(std::min(kBatch, ps.size() - first));
      want.assign(static_cast<size_t>(count * n_out), 0.0);
      parallelSlices(count, static_cast<double>(n_in * n_out), [&](int64_t begin, int64_t end) {
        std::vector<double> a(static_cast<size_t>(n_in));
        for (int64_t r = begin; r < end; ++r) {
          poll();
          const int64_t p = ps[first + static_cast<size_t>(r)];
          for (int64_t c = 0; c < n_in; ++c) a[c] = in(p, c);
          double* out = want.data() + r * n_out;
          for (int64_t j = 0; j < n_out; ++j) out[j] = bias ? (*bias)[static_cast<size_t>(j)] : 0.0;
          // Four outputs at a time: independent chains, each summed in c order as a plain loop.
          int64_t j = 0;
          for (; j + 4 <= n_out; j += 4) {
            double a0 = out[j], a1 = out[j + 1], a2 = out[j + 2], a3 = out[j + 3];
            for (int64_t c = 0; c < n_in; ++c) {
              a0 += a[c] * w(j, c);
              a1 += a[c] * w(j + 1, c);
              a2 += a[c] * w(j + 2, c);
              a3 += a[c] * w(j + 3, c);
            }
            out[j] = a0, out[j + 1] = a1, out[j + 2] = a2, out[j + 3] = a3;
          }
          for (; j < n_out; ++j)
            for (int64_t c = 0; c < n_in; ++c) out[j] += a[c] * w(j, c);
        }
      });
      for (int64_t r = 0; r < count; ++r) {
        const int64_t p = ps[first + static_cast<size_t>(r)];
        for (int64_t j = 0; j < n_out; ++j) t.add(want[static_cast<size_t>(r * n_out + j)], got(p, j), {-1, p * n_out + j});
      }
    }
    checked_ += static_cast<int64_t>(ps.size());
  }
  // dw(i, j) = sum_p a(p, i) b(p, j) for the sampled rows i; db(i) = sum_p a(p, i) for every i.
  template <class A, class Bm>
  void weights(ErrorTally& dw, ErrorTally* db, const std::vector<int64_t>& is, int64_t m, int64_t n, A a, Bm b,
               const std::vector<float>& got_w, const std::vector<float>* got_b) {
    std::vector<double> want;
    for (size_t first = 0; first < is.size(); first += kBatch) {
      const int64_t count = static_cast<int64_t>(std::min(kBatch, is.size() - first));
      want.assign(static_cast<size_t>(count * n), 0.0);
      parallelSlices(count, static_cast<double>(z_.R * n), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          poll();
          const int64_t i = is[first + static_cast<size_t>(r)];
          double* acc = want.data() + r * n;
          for (int64_t p = 0; p < z_.R; ++p) {
            const double ap = a(p, i);
            if (ap != 0.0)
              for (int64_t j = 0; j < n; ++j) acc[j] += ap * b(p, j);
          }
        }
      });
      for (int64_t r = 0; r < count; ++r) {
        const int64_t i = is[first + static_cast<size_t>(r)];
        for (int64_t j = 0; j < n; ++j) dw.add(want[static_cast<size_t>(r * n + j)], got_w[static_cast<size_t>(i * n + j)], {-1, i * n + j});
      }
    }
    checked_ += static_cast<int64_t>(is.size());
    if (!db) return;
    for (int64_t i = 0; i < m; ++i) {
      if (i % 64 == 0) poll();
      double sum = 0;
      for (int64_t p = 0; p < z_.R; ++p) sum += a(p, i);
      db->add(sum, (*got_b)[static_cast<size_t>(i)], {-1, i});
    }
  }
  int64_t checked() const { return checked_; }
  const Layout& z() const { return z_; }

 private:
  static constexpr size_t kBatch = 256;
  const Layout z_;
  const std::atomic<bool>* cancel_;
  int64_t checked_ = 0;
};

// Folds a sub-check (the attention's, from core/check/reference*.h) into the layer's result.
void fold(Accuracy& a, const Accuracy& part, const std::string& part_problem, std::string& problem) {
  if (!(part.max_abs_error <= a.max_abs_error)) a.max_abs_error = part.max_abs_error;
  a.rel_l2_error = std::max(a.rel_l2_error, part.rel_l2_error);
  a.rows_checked += part.rows_checked;
  a.rows_total += part.rows_total;
  if (problem.empty() && !part_problem.empty()) problem = part_problem;
  if (problem.empty() && !(part.max_abs_error <= part.tolerance)) problem = "attention: max abs error above tolerance";
}

void fold(Accuracy& a, const ErrorTally& t, std::string& problem) {
  const double e = t.normalised();
  if (!(e <= a.max_abs_error)) a.max_abs_error = e;
  a.rel_l2_error = std::max(a.rel_l2_error, t.relL2());
  if (!problem.empty() || e <= a.tolerance) return;
  std::ostringstream os;
  if (t.any_nonfinite)
    os << t.name << " " << toString(t.nonfinite) << " is not finite";
  else
    os << t.name << " error " << e << " > tolerance " << a.tolerance << " (" << toString(t.worst) << ": " << t.worst_got
       << ", float64 " << t.worst_want << ")";
  problem = os.str();
}

}  // namespace

int64_t layerIoBytes(const WorkloadSpec& s) {
  const Layout z(s);
  // w_qkv, b_qkv, w_o, b_o of every layer
  const int64_t weights = (z.Ht * z.E + z.Ht + z.E * z.HD + z.E) * std::max<int64_t>(1, s.layers);
  const int64_t forward = 2 * z.R * z.E + weights;                // x, y and the weights
  const int64_t train = s.pass == Pass::train ? 2 * z.R * z.E + weights : 0;  // G, dx and the weights' gradients
  return (forward + train) * bytesPerElement(s.dtype) + s.maskBytes();
}

double layerProjectionFlops(const WorkloadSpec& s) {
  const Layout z(s);
  return 2.0 * static_cast<double>(z.R) * static_cast<double>(z.E) * static_cast<double>(z.Ht + z.HD) *
         static_cast<double>(std::max<int64_t>(1, s.layers));
}

Accuracy checkLayer(const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& y_got,
                    const LayerGradients* grads, const LayerIntermediates* mid, const std::atomic<bool>* cancel,
                    std::string* problemOut, CheckDepth depth) {
  Accuracy a;
  a.checked = true;
  a.tolerance = toleranceFor(s.dtype);
  std::string problem;
  const Layout z(s);
  const bool train = s.pass == Pass::train;
  auto fail = [&](const std::string& why) {
    a.max_abs_error = a.rel_l2_error = INFINITY;
    if (problemOut) *problemOut = why;
    return a;
  };
  if (!mid) return fail("the execution gave no intermediates (q, k, v, o) to check the layer's stages against");
  if (static_cast<int64_t>(y_got.size()) != z.R * z.E)
    return fail("y has " + std::to_string(y_got.size()) + " values, expected " + std::to_string(z.R * z.E));
  if (mid->q.elements() != s.qElements() || mid->k.elements() != s.kvElements() || mid->v.elements() != s.kvElements() ||
      mid->o.elements() != s.qElements())
    return fail("the layer's intermediates q, k, v, o do not have the spec's shapes");
  if (train && (!grads || grads->dx.size() != y_got.size() || in.g.elements() != z.R * z.E ||
                mid->d_o.elements() != s.qElements() || mid->dq.elements() != s.qElements()))
    return fail("a train pass needs G, the gradients and dO, dq, dk, dv to check");
  // A NaN or Inf fails wherever it is, sampled or not.
  std::vector<std::pair<const std::vector<float>*, const char*>> outputs = {{&y_got, "y"}};
  if (train)
    outputs.insert(outputs.end(), {{&grads->dx, "dx"}, {&grads->dw_qkv, "dw_qkv"}, {&grads->db_qkv, "db_qkv"},
                                   {&grads->dw_o, "dw_o"}, {&grads->db_o, "db_o"}});
  for (const auto& [t, name] : outputs)
    if (const int64_t at = firstNonFinite(*t); at >= 0)
      return fail(std::string(name) + " element " + std::to_string(at) + " is not finite (" +
                  std::to_string((*t)[static_cast<size_t>(at)]) + ")");

  Checker c(s, cancel);
  const std::vector<float> x = floats(in.x), wqkv = floats(in.w_qkv), bqkv = floats(in.b_qkv), wo = floats(in.w_o),
                           bo = floats(in.b_o), q = floats(mid->q), k = floats(mid->k), v = floats(mid->v),
                           o = floats(mid->o);
  auto X = [&](int64_t p, int64_t e) { return static_cast<double>(x[static_cast<size_t>(p * z.E + e)]); };
  auto Wqkv = [&](int64_t j, int64_t e) { return static_cast<double>(wqkv[static_cast<size_t>(j * z.E + e)]); };
  auto Wo = [&](int64_t e, int64_t c2) { return static_cast<double>(wo[static_cast<size_t>(e * z.HD + c2)]); };
  auto A = [&](int64_t p, int64_t c2) { return static_cast<double>(o[static_cast<size_t>(z.split(p, c2, z.H))]); };
  // A sampled stage takes, besides a position of every block of every batch, the positions whose
  // input row is largest (and the weight rows whose input column is).
  auto positions = [&](int64_t n_in, int64_t cost_per, uint64_t salt, auto in) {
    return sample(s, depth, z.B, z.L, cost_per, salt, [&](int64_t p) {
      double sum = 0;
      for (int64_t c = 0; c < n_in; ++c) sum += in(p, c) * in(p, c);
      return sum;
    });
  };
  auto weightRows = [&](int64_t groups, int64_t m, int64_t cost_per, uint64_t salt, auto a) {
    return sample(s, depth, groups, m / groups, cost_per, salt, [&](int64_t i) {
      double sum = 0;
      for (int64_t p = 0; p < z.R; ++p) sum += a(p, i) * a(p, i);
      return sum;
    });
  };

  // Forward: q, k, v; the attention on them; y.
  ErrorTally qkv("q/k/v"), y("y");
  c.rows(qkv, positions(z.E, z.E * z.Ht, 0x71, X), z.E, z.Ht, X, Wqkv, &bqkv, [&](int64_t p, int64_t j) { return z.fused(q, k, v, p, j); });
  fold(a, qkv, problem);
  WorkloadSpec as = s;
  as.kind = WorkloadKind::attention;
  HostInputs ai;
  ai.q = mid->q;
  ai.k = mid->k;
  ai.v = mid->v;
  ai.mask = in.mask;
  ai.additive_mask = in.additive_mask;
  {
    std::string p;
    const Accuracy part = checkAccuracy(as, ai, o, cancel, &p, depth);
    fold(a, part, p.empty() ? "" : "o (attention output): " + p, problem);
  }
  c.rows(y, positions(z.HD, z.HD * z.E, 0x79, A), z.HD, z.E, A, Wo, &bo,
         [&](int64_t p, int64_t e) { return static_cast<double>(y_got[static_cast<size_t>(p * z.E + e)]); });
  fold(a, y, problem);

  if (train) {
    const std::vector<float> g = floats(in.g), d_o = floats(mid->d_o), dq = floats(mid->dq), dk = floats(mid->dk),
                             dv = floats(mid->dv);
    auto G = [&](int64_t p, int64_t e) { return static_cast<double>(g[static_cast<size_t>(p * z.E + e)]); };
    auto dQKV = [&](int64_t p, int64_t j) { return z.fused(dq, dk, dv, p, j); };
    ErrorTally dO("dO"), dwo("dw_o"), dbo("db_o"), dwqkv("dw_qkv"), dbqkv("db_qkv"), dx("dx");
    // dO = G w_o: column c of dO takes column c of w_o.
    c.rows(dO, positions(z.E, z.E * z.HD, 0x64, G), z.E, z.HD, G, [&](int64_t c2, int64_t e) { return Wo(e, c2); }, nullptr,
           [&](int64_t p, int64_t c2) { return static_cast<double>(d_o[static_cast<size_t>(z.split(p, c2, z.H))]); });
    c.weights(dwo, &dbo, weightRows(1, z.E, z.R * z.HD, 0x77, G), z.E, z.HD, G, A, grads->dw_o, &grads->db_o);
    for (const ErrorTally* t : {&dO, &dwo, &dbo}) fold(a, *t, problem);
    {
      HostInputs gi = ai;
      gi.g = mid->d_o;
      AttentionGradients ag{dq, dk, dv};
      std::string p;
      const Accuracy part = checkGradients(as, gi, ag, cancel, &p, depth);
      fold(a, part, p, problem);
    }
    c.weights(dwqkv, &dbqkv, weightRows(z.Ht / z.D, z.Ht, z.R * z.E, 0x71776b, dQKV), z.Ht, z.E, dQKV, X, grads->dw_qkv, &grads->db_qkv);
    c.rows(dx, positions(z.Ht, z.Ht * z.E, 0x6478, dQKV), z.Ht, z.E, dQKV, [&](int64_t e, int64_t j) { return Wqkv(j, e); },
           nullptr, [&](int64_t p, int64_t e) { return static_cast<double>(grads->dx[static_cast<size_t>(p * z.E + e)]); });
    for (const ErrorTally* t : {&dwqkv, &dbqkv, &dx}) fold(a, *t, problem);
  }
  a.rows_checked += c.checked();
  a.rows_total += z.R * (train ? 4 : 2) + (train ? z.E + z.Ht : 0);
  if (problemOut) *problemOut = problem;
  return a;
}

namespace {

// Values the execution held in the dtype, stored back in it (exact: they were rounded to it).
HostTensor tensorOf(DType dtype, const std::vector<float>& values, std::vector<int64_t> shape) {
  HostTensor t = HostTensor::zeros(dtype, std::move(shape));
  for (int64_t i = 0; i < t.elements() && i < static_cast<int64_t>(values.size()); ++i)
    t.set(i, values[static_cast<size_t>(i)]);
  return t;
}

}  // namespace

Accuracy checkStack(const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& y,
                    const std::vector<LayerGradients>* grads, const std::vector<LayerIntermediates>* mid,
                    const std::atomic<bool>* cancel, std::string* problemOut, CheckDepth depth) {
  const bool train = s.pass == Pass::train;
  const size_t n = static_cast<size_t>(s.layers);
  auto fail = [&](const std::string& why) {
    Accuracy a;
    a.checked = true;
    a.tolerance = toleranceFor(s.dtype);
    a.max_abs_error = a.rel_l2_error = INFINITY;
    if (problemOut) *problemOut = why;
    return a;
  };
  if (train && (!grads || grads->size() != n))
    return fail("a train pass of " + std::to_string(n) + " layers needs each layer's gradients (got " +
                std::to_string(grads ? grads->size() : 0) + ")");
  if (mid && mid->size() != n)
    return fail("the execution gave the intermediates of " + std::to_string(mid->size()) + " layers, expected " +
                std::to_string(n));
  if (n == 1)
    return checkLayer(s, in, y, train ? &grads->front() : nullptr, mid ? &mid->front() : nullptr, cancel, problemOut,
                      depth);
  if (!mid) return fail("the execution gave no intermediates (each layer's x, q, k, v, o) to check the stack against");
  WorkloadSpec one = s;
  one.layers = 1;
  const std::vector<int64_t> xs{s.batch, s.seq_q, layerWidth(s)};
  for (size_t l = 1; l < n; ++l)
    if ((*mid)[l].x.elements() != s.batch * s.seq_q * layerWidth(s))
      return fail("layer " + std::to_string(l + 1) + ": the execution gave no input x to check it against");
  Accuracy worst;
  std::string worstProblem;
  int64_t checked = 0, total = 0;
  // One layer's inputs, the mask copied once (a per-head mask can be the largest tensor).
  HostInputs layer;
  layer.mask = in.mask;
  layer.additive_mask = in.additive_mask;
  for (size_t l = 0; l < n; ++l) {
    layer.x = l == 0 ? in.x : (*mid)[l].x;
    const HostInputs::WeightsOf w = in.weights(static_cast<int64_t>(l));
    layer.w_qkv = *w.w_qkv;
    layer.b_qkv = *w.b_qkv;
    layer.w_o = *w.w_o;
    layer.b_o = *w.b_o;
    if (train) layer.g = l + 1 == n ? in.g : tensorOf(s.dtype, (*grads)[l + 1].dx, xs);
    const std::vector<float> layer_y = l + 1 == n ? y : floats((*mid)[l + 1].x);
    std::string problem;
    const Accuracy a = checkLayer(one, layer, layer_y, train ? &(*grads)[l] : nullptr, &(*mid)[l], cancel, &problem,
                                  depth);
    checked += a.rows_checked;
    total += a.rows_total;
    // The first failing layer is the one named; otherwise the largest error stands for the stack.
    const bool first_failure = !a.passed() && worstProblem.empty();
    if (first_failure) worstProblem = "layer " + std::to_string(l + 1) + ": " + problem;
    if (l == 0 || first_failure || (worstProblem.empty() && a.max_abs_error > worst.max_abs_error)) {
      const double rel = std::max(worst.rel_l2_error, a.rel_l2_error);
      worst = a;
      worst.rel_l2_error = l == 0 ? a.rel_l2_error : rel;
    }
  }
  worst.rows_checked = checked;
  worst.rows_total = total;
  if (problemOut && !worstProblem.empty()) *problemOut = worstProblem;
  return worst;
}

}  // namespace attnscope
