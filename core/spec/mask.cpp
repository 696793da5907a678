#include "core/spec/mask.h"

#include <algorithm>
#include <limits>

#include "core/base/random.h"

namespace attnscope {

KeyRange visibleKeys(const MaskSpec& mask, int64_t i, int64_t seq_q, int64_t seq_kv) {
  const int64_t off = seq_kv - seq_q;
  switch (mask.kind) {
    case MaskKind::causal: return {0, std::clamp<int64_t>(i + off + 1, 0, seq_kv)};
    case MaskKind::window: {
      int64_t end = std::clamp<int64_t>(i + off + 1, 0, seq_kv);
      int64_t begin = std::clamp<int64_t>(i + off - mask.width + 1, 0, seq_kv);
      return {begin, end};
    }
    case MaskKind::block: {
      int64_t b = i / mask.width;
      return {std::min(b * mask.width, seq_kv), std::min((b + 1) * mask.width, seq_kv)};
    }
    default: return {0, seq_kv};
  }
}

bool maskAllows(const MaskSpec& mask, int64_t i, int64_t j, int64_t seq_q, int64_t seq_kv) {
  KeyRange r = visibleKeys(mask, i, seq_q, seq_kv);
  return j >= r.begin && j < r.end;
}

namespace {
// Element (b, h, i, j)'s index in the mask's layout.
uint64_t maskIndex(const WorkloadSpec& s, int64_t b, int64_t h, int64_t i, int64_t j) {
  const int64_t lkv = s.seqKv();
  return s.mask_layout == MaskLayout::per_head ? static_cast<uint64_t>(((b * s.heads + h) * s.seq_q + i) * lkv + j)
                                               : static_cast<uint64_t>(i * lkv + j);
}
}  // namespace

bool denseMaskValue(const WorkloadSpec& s, int64_t b, int64_t h, int64_t i, int64_t j) {
  if (s.mask.keep_prob >= 1.0) return true;
  return uniform01(s.seed, RandomStream::mask, maskIndex(s, b, h, i, j)) < s.mask.keep_prob;
}

float additiveMaskValue(const WorkloadSpec& s, int64_t b, int64_t h, int64_t i, int64_t j) {
  const uint64_t index = maskIndex(s, b, h, i, j);
  if (s.mask.keep_prob < 1.0 && !(uniform01(s.seed, RandomStream::mask, index) < s.mask.keep_prob))
    return -std::numeric_limits<float>::infinity();
  const double bias = 2.0 * uniform01(s.seed, RandomStream::mask_bias, index) - 1.0;
  return roundTo(s.maskDType(), static_cast<float>(bias));
}

std::vector<float> makeAdditiveMask(const WorkloadSpec& s) {
  std::vector<float> m(static_cast<size_t>(s.maskElements()));
  const int64_t lq = s.seq_q, lkv = s.seqKv();
  const int64_t planes = s.mask_layout == MaskLayout::per_head ? s.batch * s.heads : 1;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lkv; ++j)
        m[static_cast<size_t>((p * lq + i) * lkv + j)] = additiveMaskValue(s, p / s.heads, p % s.heads, i, j);
  return m;
}

std::vector<uint8_t> makeDenseMask(const WorkloadSpec& s) {
  std::vector<uint8_t> m(static_cast<size_t>(s.maskBytes()));
  const int64_t lq = s.seq_q, lkv = s.seqKv();
  const int64_t planes = s.mask_layout == MaskLayout::per_head ? s.batch * s.heads : 1;
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < lq; ++i)
      for (int64_t j = 0; j < lkv; ++j)
        m[static_cast<size_t>((p * lq + i) * lkv + j)] =
            denseMaskValue(s, p / s.heads, p % s.heads, i, j) ? 1 : 0;
  return m;
}

double computedPairsPerHead(const WorkloadSpec& s) {
  const int64_t lq = s.seq_q, lkv = s.seqKv();
  switch (s.mask.kind) {
    case MaskKind::causal: return 0.5 * static_cast<double>(lq) * static_cast<double>(lkv);
    case MaskKind::window:
    case MaskKind::block: {
      double pairs = 0;
      for (int64_t i = 0; i < lq; ++i) {
        KeyRange r = visibleKeys(s.mask, i, lq, lkv);
        pairs += static_cast<double>(std::max<int64_t>(0, r.end - r.begin));
      }
      return pairs;
    }
    default: return static_cast<double>(lq) * static_cast<double>(lkv);
  }
}

double forwardFlops(const WorkloadSpec& s) {
  return 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) * computedPairsPerHead(s) *
         static_cast<double>(s.headDim());
}

}  // namespace attnscope
