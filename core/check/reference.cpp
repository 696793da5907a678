#include "core/check/reference.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/backend/backend.h"
#include "core/check/check_sample.h"
#include "core/check/reference_kernels.h"

namespace attnscope {
namespace {

// Rows compared per batch: the reference of a full check is never held for all rows at once.
constexpr size_t kRowsPerBatch = 1024;

// The rows of a sampled check a (mask) edge or a size alone does not pick: the largest norms of q
// (and of `also`) and the rows whose scores could be too large for float32.
void addNormRows(const WorkloadSpec& s, const HostInputs& in, const HostTensor* also, CheckSample& cs) {
  const int64_t D = s.headDim(), Lq = s.seq_q, Lkv = s.seqKv(), H = s.heads, Hkv = s.kvHeads();
  if (in.q.elements() != s.qElements()) return;
  const std::vector<double> q = rowNorms(in.q, D);
  cs.largest(q);
  if (also && also->elements() == s.qElements()) cs.largest(rowNorms(*also, D));
  if (in.k.elements() != s.kvElements()) return;
  const std::vector<double> kmax = largestNorms(rowNorms(in.k, D), Lkv);
  const double scale = std::fabs(s.effectiveScale());
  for (int64_t r = 0; r < static_cast<int64_t>(q.size()); ++r) {
    const int64_t bh = r / Lq, b = bh / H, hk = bh % H / (H / Hkv);
    if (scoresAtRisk(scale * std::sqrt(q[static_cast<size_t>(r)]) * kmax[static_cast<size_t>(b * Hkv + hk)], s.dtype))
      cs.add(r);
  }
}

}  // namespace

bool referenceAttends(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv) {
  const int64_t off = seq_kv - seq_q;
  switch (mask.kind) {
    case MaskKind::none:
    case MaskKind::dense:
    case MaskKind::additive: return true;
    case MaskKind::causal: return j <= i + off;
    case MaskKind::window: return j <= i + off && j > i + off - mask.width;
    case MaskKind::block: return i / mask.width == j / mask.width;
  }
  return false;
}

bool scoresAtRisk(double bound, DType dtype) { return !(bound < toleranceFor(dtype) * double(1 << 20)); }

std::vector<double> largestNorms(const std::vector<double>& sq, int64_t per) {
  std::vector<double> out;
  for (size_t first = 0; per > 0 && first < sq.size(); first += static_cast<size_t>(per)) {
    double m = 0;
    for (size_t i = first; i < std::min(sq.size(), first + static_cast<size_t>(per)); ++i)
      if (!(sq[i] <= m)) m = sq[i];  // keeps a NaN
    out.push_back(std::sqrt(m));
  }
  return out;
}

void referenceRows(const WorkloadSpec& s, const HostInputs& in, const std::vector<int64_t>& rows,
                   std::vector<double>& out, const std::atomic<bool>* cancel, std::vector<char>* keyless) {
  const int64_t H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const int64_t group = H / Hkv;
  const double scale = s.effectiveScale();
  const bool dense = s.mask.kind == MaskKind::dense, additive = s.mask.kind == MaskKind::additive;
  out.assign(rows.size() * static_cast<size_t>(D), 0.0);
  if (keyless) keyless->assign(rows.size(), 0);
  const FloatView K(in.k), V(in.v);
  parallelSlices(static_cast<int64_t>(rows.size()), 2.0 * static_cast<double>(Lkv * D), [&](int64_t begin, int64_t end) {
    std::vector<double> q(static_cast<size_t>(D)), scores(static_cast<size_t>(Lkv));
    std::vector<char> visible(static_cast<size_t>(Lkv));
    for (int64_t r = begin; r < end; ++r) {
      if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
      const int64_t row = rows[static_cast<size_t>(r)];
      const int64_t i = row % Lq, bh = row / Lq, h = bh % H, b = bh / H;
      const int64_t hk = h / group;
      for (int64_t d = 0; d < D; ++d) q[d] = in.q.at(row * D + d);
      // The keys the table can let through (held equal to referenceAttends by a test); each is
      // still asked below, so the rule stays the one written from the table.
      const IndexRange range = keysSeenBy(s.mask, i, Lq, Lkv);
      const int64_t head = (b * Hkv + hk) * Lkv * D;
      if (!range.empty()) dotRows(q.data(), K.data() + head, D, range.lo, range.hi, scores.data());
      double mx = -INFINITY;
      bool any = false;
      for (int64_t j = range.lo; j <= range.hi; ++j) {
        bool vis = referenceAttends(s.mask, i, j, Lq, Lkv);
        const int64_t mi = s.mask_layout == MaskLayout::per_head ? ((b * H + h) * Lq + i) * Lkv + j : i * Lkv + j;
        if (vis && dense) vis = in.mask[static_cast<size_t>(mi)] != 0;
        // The bias as the mask tensor holds it (rounded to mask_dtype), added to the scaled score
        // as torch adds attn_mask; -inf drops the key.
        const double bias = additive ? static_cast<double>(in.additive_mask.at(mi)) : 0.0;
        if (vis && additive) vis = bias != -INFINITY;
        visible[j] = vis;
        if (!vis) continue;
        scores[j] = scores[j] * scale + bias;
        // std::max would drop a NaN score; keep it so the row comes out NaN and the check fails.
        if (!any || std::isnan(scores[j]) || scores[j] > mx) mx = scores[j];
        any = true;
      }
      if (!any) {  // no visible key: zeros
        if (keyless) (*keyless)[static_cast<size_t>(r)] = 1;
        continue;
      }
      double sum = 0;
      for (int64_t j = range.lo; j <= range.hi; ++j)
        if (visible[j]) {
          scores[j] = std::exp(scores[j] - mx);
          sum += scores[j];
        }
      double* o = out.data() + static_cast<size_t>(r * D);
      for (int64_t j = range.lo; j <= range.hi; ++j) {
        if (!visible[j]) continue;
        const double p = scores[j] / sum;
        const float* vj = V.data() + head + j * D;
        for (int64_t d = 0; d < D; ++d) o[d] += p * static_cast<double>(vj[d]);
      }
    }
  });
}

std::vector<int64_t> accuracyRows(const WorkloadSpec& s, const HostInputs& in, CheckDepth depth, int64_t budget,
                                  const HostTensor* also) {
  const int64_t bh = s.batch * s.heads, total = bh * s.seq_q;
  const int64_t perRow = std::max<int64_t>(1, s.seqKv() * s.headDim());
  const int64_t affordable = std::max<int64_t>(2, budget / perRow);
  CheckSample cs(bh, s.seq_q, s.seed, 0);
  if (depth == CheckDepth::every_row || (total <= kAccuracyAllRows && total <= affordable)) {
    cs.all();
    return cs.sorted();
  }
  cs.everyBlock();
  cs.inEveryGroup(maskEdges(s, false));
  std::vector<uint8_t> scratch;
  if (const std::vector<uint8_t>& kept = keptByMaskTensor(s, in, scratch); !kept.empty()) {
    if (s.mask_layout == MaskLayout::per_head)
      for (int64_t g = 0; g < bh; ++g) cs.inGroup(g, denseMaskEdges(s, kept, g, false));
    else
      cs.inEveryGroup(denseMaskEdges(s, kept, 0, false));
  }
  addNormRows(s, in, also, cs);
  cs.seeded(std::min(kAccuracySamples, affordable));
  return cs.sorted();
}

double toleranceFor(DType d) {
  switch (d) {
    case DType::fp32: return 1e-4;
    case DType::fp16: return 4e-3;
    case DType::bf16: return 3e-2;
  }
  return 0;
}

Accuracy checkAccuracy(const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& output,
                       const std::atomic<bool>* cancel, std::string* problemOut, CheckDepth depth) {
  Accuracy a;
  std::string problem;
  const int64_t D = s.headDim();
  a.rows_total = s.batch * s.heads * s.seq_q;
  a.tolerance = toleranceFor(s.dtype);
  a.checked = true;
  if (static_cast<int64_t>(output.size()) != a.rows_total * D) {
    a.max_abs_error = a.rel_l2_error = INFINITY;
    if (problemOut) *problemOut = "the output has " + std::to_string(output.size()) + " values, expected " + std::to_string(a.rows_total * D);
    return a;
  }
  std::vector<int64_t> rows = accuracyRows(s, in, depth);
  // Every value is read for a NaN or Inf: the first row holding one is checked (and fails) too.
  if (const int64_t at = firstNonFinite(output); at >= 0) {
    const auto pos = std::lower_bound(rows.begin(), rows.end(), at / D);
    if (pos == rows.end() || *pos != at / D) rows.insert(pos, at / D);
  }
  a.rows_checked = static_cast<int64_t>(rows.size());
  std::vector<double> ref;
  std::vector<char> keyless;
  double err2 = 0, ref2 = 0;
  int64_t worst = -1;
  for (size_t first = 0; first < rows.size(); first += kRowsPerBatch) {
    const std::vector<int64_t> batch(rows.begin() + static_cast<std::ptrdiff_t>(first),
                                     rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), first + kRowsPerBatch)));
    referenceRows(s, in, batch, ref, cancel, &keyless);
    for (size_t r = 0; r < batch.size(); ++r)
      for (int64_t d = 0; d < D; ++d) {
        const double want = ref[r * static_cast<size_t>(D) + d];
        const double got = output[static_cast<size_t>(batch[r] * D + d)];
        double e = std::fabs(got - want);
        if (!std::isfinite(want) || !std::isfinite(got)) {
          e = INFINITY;
          if (problem.empty()) {
            std::ostringstream os;
            os << (std::isfinite(want) ? "output" : "reference") << " row " << batch[r] << " element " << d << " is "
               << (std::isfinite(want) ? got : want)
               << (!std::isfinite(want) ? " (the inputs or the scale overflow float64)"
                   : keyless[r]         ? " (a query with no visible key: the reference gives zeros there)"
                                        : "");
            problem = os.str();
          }
        }
        if (!(e <= a.max_abs_error)) {
          a.max_abs_error = e;
          worst = batch[r];
        }
        err2 += e * e;
        ref2 += std::isfinite(want) ? want * want : 0.0;
      }
  }
  a.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (problem.empty() && !(a.max_abs_error <= a.tolerance)) {
    std::ostringstream os;
    const int64_t Lq = s.seq_q, bh = worst / Lq;
    os << "output row " << worst << " (batch " << bh / s.heads << ", head " << bh % s.heads << ", query " << worst % Lq
       << ") is off by " << a.max_abs_error << " > tolerance " << a.tolerance;
    problem = os.str();
  }
  if (problemOut) *problemOut = problem;
  return a;
}

}  // namespace attnscope
