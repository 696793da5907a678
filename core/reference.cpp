#include "core/reference.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/mask.h"
#include "core/random.h"

namespace attnscope {

void referenceRows(const WorkloadSpec& s, const HostInputs& in, const std::vector<int64_t>& rows,
                   std::vector<double>& out) {
  const int64_t H = s.heads, Hkv = s.kvHeads(), Lq = s.seq_q, Lkv = s.seqKv(), D = s.headDim();
  const int64_t group = H / Hkv;
  const double scale = s.effectiveScale();
  const bool dense = s.mask.kind == MaskKind::dense;
  out.assign(rows.size() * static_cast<size_t>(D), 0.0);
  std::vector<double> q(static_cast<size_t>(D)), scores(static_cast<size_t>(Lkv));
  std::vector<char> visible(static_cast<size_t>(Lkv));
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t row = rows[r];
    const int64_t i = row % Lq, bh = row / Lq, h = bh % H, b = bh / H;
    const int64_t hk = h / group;
    for (int64_t d = 0; d < D; ++d) q[d] = in.q.at(row * D + d);
    const KeyRange range = visibleKeys(s.mask, i, Lq, Lkv);
    double mx = -INFINITY;
    for (int64_t j = 0; j < Lkv; ++j) {
      bool vis = j >= range.begin && j < range.end;
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
      mx = std::max(mx, scores[j]);
    }
    if (mx == -INFINITY) continue;  // no visible key: zeros
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

std::vector<int64_t> accuracyRows(const WorkloadSpec& s, int64_t full_limit, int64_t samples) {
  const int64_t total = s.batch * s.heads * s.seq_q;
  std::vector<int64_t> rows;
  if (total <= full_limit || total <= samples) {
    rows.resize(static_cast<size_t>(total));
    for (int64_t r = 0; r < total; ++r) rows[r] = r;
    return rows;
  }
  std::set<int64_t> chosen{0, total - 1};
  for (uint64_t k = 0; static_cast<int64_t>(chosen.size()) < samples; ++k)
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

Accuracy checkAccuracy(const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& output) {
  Accuracy a;
  const int64_t D = s.headDim();
  std::vector<int64_t> rows = accuracyRows(s);
  std::vector<double> ref;
  referenceRows(s, in, rows, ref);
  double err2 = 0, ref2 = 0;
  for (size_t r = 0; r < rows.size(); ++r)
    for (int64_t d = 0; d < D; ++d) {
      const double want = ref[r * static_cast<size_t>(D) + d];
      const double got = output[static_cast<size_t>(rows[r] * D + d)];
      const double e = std::isfinite(got) ? std::fabs(got - want) : INFINITY;
      a.max_abs_error = std::max(a.max_abs_error, e);
      err2 += e * e;
      ref2 += want * want;
    }
  a.checked = true;
  a.rel_l2_error = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  a.rows_checked = static_cast<int64_t>(rows.size());
  a.rows_total = s.batch * s.heads * s.seq_q;
  a.tolerance = toleranceFor(s.dtype);
  return a;
}

}  // namespace attnscope
