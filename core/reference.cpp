#include "core/reference.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "core/backend.h"
#include "core/random.h"

namespace attnscope {

bool referenceAttends(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv) {
  const int64_t off = seq_kv - seq_q;
  switch (mask.kind) {
    case MaskKind::none:
    case MaskKind::dense: return true;
    case MaskKind::causal: return j <= i + off;
    case MaskKind::window: return j <= i + off && j > i + off - mask.width;
    case MaskKind::block: return i / mask.width == j / mask.width;
  }
  return false;
}

void referenceRows(const WorkloadSpec& s, const HostInputs& in, const std::vector<int64_t>& rows,
                   std::vector<double>& out, const std::atomic<bool>* cancel, std::vector<char>* keyless) {
  const int64_t H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const int64_t group = H / Hkv;
  const double scale = s.effectiveScale();
  const bool dense = s.mask.kind == MaskKind::dense;
  out.assign(rows.size() * static_cast<size_t>(D), 0.0);
  if (keyless) keyless->assign(rows.size(), 0);
  std::vector<double> q(static_cast<size_t>(D)), scores(static_cast<size_t>(Lkv));
  std::vector<char> visible(static_cast<size_t>(Lkv));
  for (size_t r = 0; r < rows.size(); ++r) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled();
    const int64_t row = rows[r];
    const int64_t i = row % Lq, bh = row / Lq, h = bh % H, b = bh / H;
    const int64_t hk = h / group;
    for (int64_t d = 0; d < D; ++d) q[d] = in.q.at(row * D + d);
    double mx = -INFINITY;
    bool any = false;
    for (int64_t j = 0; j < Lkv; ++j) {
      bool vis = referenceAttends(s.mask, i, j, Lq, Lkv);
      if (vis && dense) {
        int64_t mi = s.mask_layout == MaskLayout::per_head ? ((b * H + h) * Lq + i) * Lkv + j : i * Lkv + j;
        vis = in.mask[static_cast<size_t>(mi)] != 0;
      }
      visible[j] = vis;
      if (!vis) continue;
      const int64_t kbase = ((b * Hkv + hk) * Lkv + j) * D;
      double acc = 0;
      for (int64_t d = 0; d < D; ++d) acc += q[d] * static_cast<double>(in.k.at(kbase + d));
      scores[j] = acc * scale;
      // std::max would drop a NaN score; keep it so the row comes out NaN and the check fails.
      if (!any || std::isnan(scores[j]) || scores[j] > mx) mx = scores[j];
      any = true;
    }
    if (!any) {  // no visible key: zeros
      if (keyless) (*keyless)[r] = 1;
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < Lkv; ++j)
      if (visible[j]) {
        scores[j] = std::exp(scores[j] - mx);
        sum += scores[j];
      }
    double* o = out.data() + r * static_cast<size_t>(D);
    for (int64_t j = 0; j < Lkv; ++j) {
      if (!visible[j]) continue;
      const double p = scores[j] / sum;
      const int64_t vbase = ((b * Hkv + hk) * Lkv + j) * D;
      for (int64_t d = 0; d < D; ++d) o[d] += p * static_cast<double>(in.v.at(vbase + d));
    }
  }
}

std::vector<int64_t> accuracyRows(const WorkloadSpec& s, int64_t budget) {
  const int64_t total = s.batch * s.heads * s.seq_q;
  const int64_t perRow = std::max<int64_t>(1, s.seqKv() * s.headDim());
  const int64_t affordable = std::max<int64_t>(2, budget / perRow);
  std::vector<int64_t> rows;
  const int64_t n = std::min({kAccuracySamples, affordable, total});
  if ((total <= kAccuracyAllRows && total <= affordable) || n >= total) {
    rows.resize(static_cast<size_t>(total));
    for (int64_t r = 0; r < total; ++r) rows[r] = r;
    return rows;
  }
  std::set<int64_t> chosen{0, total - 1};
  for (uint64_t k = 0; static_cast<int64_t>(chosen.size()) < n; ++k)
    chosen.insert(static_cast<int64_t>(randomBits(s.seed, RandomStream::sample, k) % static_cast<uint64_t>(total)));
  return {chosen.begin(), chosen.end()};
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
                       const std::atomic<bool>* cancel, std::string* problemOut) {
  Accuracy a;
  std::string problem;
  const int64_t D = s.headDim();
  const std::vector<int64_t> rows = accuracyRows(s);
  a.rows_checked = static_cast<int64_t>(rows.size());
  a.rows_total = s.batch * s.heads * s.seq_q;
  a.tolerance = toleranceFor(s.dtype);
  a.checked = true;
  if (static_cast<int64_t>(output.size()) != a.rows_total * D) {
    a.max_abs_error = a.rel_l2_error = INFINITY;
    if (problemOut) *problemOut = "the output has " + std::to_string(output.size()) + " values, expected " + std::to_string(a.rows_total * D);
    return a;
  }
  std::vector<double> ref;
  std::vector<char> keyless;
  referenceRows(s, in, rows, ref, cancel, &keyless);
  double err2 = 0, ref2 = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t d = 0; d < D; ++d) {
      const double want = ref[r * static_cast<size_t>(D) + d];
      const double got = output[static_cast<size_t>(rows[r] * D + d)];
      double e = std::fabs(got - want);
      if (!std::isfinite(want) || !std::isfinite(got)) {
        e = INFINITY;
        if (problem.empty()) {
          std::ostringstream os;
          os << (std::isfinite(want) ? "output" : "reference") << " row " << rows[r] << " element " << d << " is "
             << (std::isfinite(want) ? got : want)
             << (!std::isfinite(want) ? " (the inputs or the scale overflow float64)"
                 : keyless[r]         ? " (a query with no visible key: the reference gives zeros there)"
                                      : "");
          problem = os.str();
        }
      }
      if (!(e <= a.max_abs_error)) a.max_abs_error = e;
      err2 += e * e;
      ref2 += std::isfinite(want) ? want * want : 0.0;
    }
  a.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  if (problemOut) *problemOut = problem;
  return a;
}

}  // namespace attnscope
