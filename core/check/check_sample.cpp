#include "core/check/check_sample.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "core/base/random.h"

namespace attnscope {
namespace {

IndexRange clipped(int64_t lo, int64_t hi, int64_t n) {
  lo = std::max<int64_t>(lo, 0);
  hi = std::min<int64_t>(hi, n - 1);
  return lo > hi ? IndexRange{} : IndexRange{lo, hi};
}

// The first and last rows, and rows t where the range's step from t - 1 differs from the step
// before it, with the row before (the last of the old regime): at most 2 kept at each end of
// every block of kCheckBlock.
template <class RangeOf>
std::vector<int64_t> edgesOf(int64_t n, RangeOf range) {
  std::set<int64_t> found{0, n - 1};
  IndexRange prev = range(0);
  int64_t step_lo = 0, step_hi = 0;
  for (int64_t t = 1; t < n; ++t) {
    const IndexRange r = range(t);  // an empty range is always {0, -1}, so emptying is a step too
    const int64_t lo = r.lo - prev.lo, hi = r.hi - prev.hi;
    if (t >= 2 && (lo != step_lo || hi != step_hi)) {
      found.insert(t - 1);
      found.insert(t);
    }
    step_lo = lo;
    step_hi = hi;
    prev = r;
  }
  std::map<int64_t, std::vector<int64_t>> perBlock;
  for (int64_t t : found) perBlock[t / kCheckBlock].push_back(t);
  std::vector<int64_t> out;
  for (auto& [block, ts] : perBlock) {
    if (ts.size() > 4) ts.erase(ts.begin() + 2, ts.end() - 2);
    out.insert(out.end(), ts.begin(), ts.end());
  }
  return out;
}

}  // namespace

IndexRange keysSeenBy(const MaskSpec& m, int64_t i, int64_t Lq, int64_t Lkv) {
  const int64_t off = Lkv - Lq;
  switch (m.kind) {
    case MaskKind::none:
    case MaskKind::dense:
    case MaskKind::additive: return clipped(0, Lkv - 1, Lkv);
    case MaskKind::causal: return clipped(0, i + off, Lkv);
    case MaskKind::window: return clipped(i + off - m.width + 1, i + off, Lkv);
    case MaskKind::block: return clipped(i / m.width * m.width, i / m.width * m.width + m.width - 1, Lkv);
  }
  return {};
}

IndexRange rowsSeeing(const MaskSpec& m, int64_t j, int64_t Lq, int64_t Lkv) {
  const int64_t off = Lkv - Lq;
  switch (m.kind) {
    case MaskKind::none:
    case MaskKind::dense:
    case MaskKind::additive: return clipped(0, Lq - 1, Lq);
    case MaskKind::causal: return clipped(j - off, Lq - 1, Lq);
    case MaskKind::window: return clipped(j - off, j - off + m.width - 1, Lq);
    case MaskKind::block: return clipped(j / m.width * m.width, j / m.width * m.width + m.width - 1, Lq);
  }
  return {};
}

double visiblePairsPerHead(const WorkloadSpec& s) {
  const int64_t Lq = s.seq_q, Lkv = s.seqKv();
  if (s.mask.kind == MaskKind::none) return static_cast<double>(Lq) * static_cast<double>(Lkv);
  if (maskIsTensor(s.mask)) return s.mask.keep_prob * static_cast<double>(Lq) * static_cast<double>(Lkv);
  double pairs = 0;
  for (int64_t i = 0; i < Lq; ++i) pairs += static_cast<double>(keysSeenBy(s.mask, i, Lq, Lkv).size());
  return pairs;
}

std::vector<int64_t> maskEdges(const WorkloadSpec& s, bool keys) {
  if (s.mask.kind == MaskKind::none || maskIsTensor(s.mask)) return {};
  const int64_t Lq = s.seq_q, Lkv = s.seqKv();
  if (keys) return edgesOf(Lkv, [&](int64_t j) { return rowsSeeing(s.mask, j, Lq, Lkv); });
  return edgesOf(Lq, [&](int64_t i) { return keysSeenBy(s.mask, i, Lq, Lkv); });
}

std::vector<int64_t> denseMaskEdges(const WorkloadSpec& s, const std::vector<uint8_t>& mask, int64_t head, bool keys) {
  const int64_t Lq = s.seq_q, Lkv = s.seqKv();
  const size_t base = static_cast<size_t>(head * Lq * Lkv);
  if (mask.size() < base + static_cast<size_t>(Lq * Lkv)) return {};
  std::vector<int64_t> counts(static_cast<size_t>(keys ? Lkv : Lq), 0);
  for (int64_t i = 0; i < Lq; ++i)
    for (int64_t j = 0; j < Lkv; ++j)
      if (mask[base + static_cast<size_t>(i * Lkv + j)]) ++counts[static_cast<size_t>(keys ? j : i)];
  const auto [fewest, most] = std::minmax_element(counts.begin(), counts.end());
  return {fewest - counts.begin(), most - counts.begin()};
}

const std::vector<uint8_t>& keptByMaskTensor(const WorkloadSpec& s, const HostInputs& in, std::vector<uint8_t>& scratch) {
  if (s.mask.kind == MaskKind::dense) return in.mask;  // not copied: it may be [B,H,Lq,Lkv]
  scratch = keptByAdditiveMask(s, in);
  return scratch;
}

std::vector<uint8_t> keptByAdditiveMask(const WorkloadSpec& s, const HostInputs& in) {
  if (s.mask.kind != MaskKind::additive || s.mask.keep_prob >= 1.0) return {};
  std::vector<uint8_t> kept(static_cast<size_t>(std::max<int64_t>(0, in.additive_mask.elements())));
  for (size_t i = 0; i < kept.size(); ++i) kept[i] = std::isinf(in.additive_mask.at(static_cast<int64_t>(i))) ? 0 : 1;
  return kept;
}

std::vector<double> rowNorms(const HostTensor& t, int64_t D, int64_t first, int64_t rows) {
  const int64_t available = D > 0 && !t.bytes.empty() ? t.elements() / D - first : 0;
  rows = std::clamp<int64_t>(rows < 0 ? available : rows, 0, std::max<int64_t>(0, available));
  std::vector<double> out(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t d = 0; d < D; ++d) {
      const double x = t.at((first + r) * D + d);
      sum += x * x;
    }
    out[static_cast<size_t>(r)] = sum;
  }
  return out;
}

CheckSample::CheckSample(int64_t groups, int64_t per_group, uint64_t seed, uint64_t salt)
    : groups_(std::max<int64_t>(0, groups)), per_(std::max<int64_t>(0, per_group)), seed_(seed), salt_(salt) {}

void CheckSample::all() {
  for (int64_t i = 0; i < total(); ++i) chosen_.insert(chosen_.end(), i);
}

void CheckSample::everyBlock() {
  for (int64_t g = 0; g < groups_; ++g)
    for (int64_t first = 0; first < per_; first += kCheckBlock) {
      const int64_t len = std::min(kCheckBlock, per_ - first);
      const uint64_t k = static_cast<uint64_t>(g * per_ + first);
      chosen_.insert(g * per_ + first + static_cast<int64_t>(randomBits(seed_ ^ salt_ ^ 0x626c6bull, RandomStream::sample, k) % static_cast<uint64_t>(len)));
    }
}

void CheckSample::inEveryGroup(const std::vector<int64_t>& ts) {
  for (int64_t g = 0; g < groups_; ++g) inGroup(g, ts);
}

void CheckSample::inGroup(int64_t g, const std::vector<int64_t>& ts) {
  for (int64_t t : ts)
    if (t >= 0 && t < per_) chosen_.insert(g * per_ + t);
}

void CheckSample::largest(const std::vector<double>& norms) {
  if (static_cast<int64_t>(norms.size()) != total() || norms.empty()) return;
  // NaN compares as largest: a non-finite input row is always checked.
  auto bigger = [&](int64_t a, int64_t b) {
    const double x = norms[static_cast<size_t>(a)], y = norms[static_cast<size_t>(b)];
    return std::isnan(x) ? !std::isnan(y) : x > y;
  };
  for (int64_t g = 0; g < groups_; ++g) {
    int64_t best = g * per_;
    for (int64_t t = 1; t < per_; ++t)
      if (bigger(g * per_ + t, best)) best = g * per_ + t;
    chosen_.insert(best);
  }
  std::vector<int64_t> order(norms.size());
  std::iota(order.begin(), order.end(), 0);
  const auto top = order.begin() + std::min<int64_t>(kCheckLargest, total());
  std::partial_sort(order.begin(), top, order.end(), bigger);
  chosen_.insert(order.begin(), top);
}

void CheckSample::seeded(int64_t n) {
  if (total() == 0) return;
  const int64_t want = std::min(total(), size() + std::max<int64_t>(0, n));
  chosen_.insert(0);
  chosen_.insert(total() - 1);
  for (uint64_t k = 0; size() < want; ++k)
    chosen_.insert(static_cast<int64_t>(randomBits(seed_ ^ salt_, RandomStream::sample, k) % static_cast<uint64_t>(total())));
}

}  // namespace attnscope
