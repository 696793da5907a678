#include "core/engine/frontier.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include "core/base/format.h"
#include "core/torch_dispatch/sdpa_explain.h"
#include "core/torch_dispatch/torch_target.h"

namespace attnscope {

std::string_view toString(FrontierAxis a) {
  switch (a) {
    case FrontierAxis::seq: return "seq";
    case FrontierAxis::batch: return "batch";
    case FrontierAxis::heads: return "heads";
  }
  return "?";
}

std::optional<FrontierAxis> parseFrontierAxis(std::string_view text) {
  for (FrontierAxis a : {FrontierAxis::seq, FrontierAxis::batch, FrontierAxis::heads})
    if (text == toString(a)) return a;
  return std::nullopt;
}

WorkloadSpec withAxis(WorkloadSpec spec, FrontierAxis axis, int64_t value) {
  switch (axis) {
    case FrontierAxis::seq: spec.seq_q = value; break;  // seq_kv 0 follows it
    case FrontierAxis::batch: spec.batch = value; break;
    case FrontierAxis::heads: spec.heads = value; break;  // kv_heads 0 follows it
  }
  return spec;
}

int64_t axisValue(const WorkloadSpec& spec, FrontierAxis axis) {
  switch (axis) {
    case FrontierAxis::seq: return spec.seq_q;
    case FrontierAxis::batch: return spec.batch;
    case FrontierAxis::heads: return spec.heads;
  }
  return 0;
}

int64_t frontierCap(FrontierAxis axis) {
  switch (axis) {
    case FrontierAxis::seq: return int64_t{1} << 24;
    case FrontierAxis::batch: return int64_t{1} << 20;
    case FrontierAxis::heads: return int64_t{1} << 14;
  }
  return 1;
}

std::string decidingBuffer(const MemoryPlan& plan) {
  if (!plan.known || plan.buffers.empty()) return {};
  const int step = plan.peakStep();
  const PlannedBuffer* best = nullptr;
  for (const auto& b : plan.buffers)
    if (b.first_step <= step && step <= b.last_step && (!best || b.bytes > best->bytes)) best = &b;
  return best ? best->name + " (" + formatBytes(best->bytes) + ")" : std::string();
}

namespace {

// The values the varied axis may take, as a monotone sequence value(k), k = 1..count: every
// integer; for heads with a fixed model width, the divisors of the width; for heads with fixed
// kv_heads (GQA), its multiples.
struct Candidates {
  std::vector<int64_t> list;  // explicit (divisors), else empty
  int64_t step = 1;           // value(k) = k * step
  int64_t count = 0;
  int64_t value(int64_t k) const { return list.empty() ? k * step : list[static_cast<size_t>(k - 1)]; }
};

Candidates candidates(const WorkloadSpec& spec, FrontierAxis vary) {
  Candidates c;
  const int64_t cap = frontierCap(vary);
  if (vary == FrontierAxis::heads && spec.width > 0) {
    for (int64_t h = 1; h <= std::min(cap, spec.width); ++h)
      if (spec.width % h == 0) c.list.push_back(h);
    c.count = static_cast<int64_t>(c.list.size());
  } else if (vary == FrontierAxis::heads && spec.kv_heads > 0) {
    c.step = spec.kv_heads;
    c.count = cap / c.step;
  } else {
    c.count = cap;
  }
  return c;
}

}  // namespace

FrontierPoint frontierPoint(const FrontierQuery& q, const FrontierLine& line, int64_t other) {
  FrontierPoint pt;
  pt.other = other;
  const WorkloadSpec base = withAxis(q.spec, q.other, other);
  std::map<int64_t, FrontierPeak> seen;
  auto at = [&](int64_t v) -> const FrontierPeak& {
    auto it = seen.find(v);
    if (it != seen.end()) return it->second;
    ++pt.evaluations;
    const WorkloadSpec s = withAxis(base, q.vary, v);
    FrontierPeak p;
    if (auto errors = validate(s); !errors.empty()) {
      p.why = errors.front().message;
    } else {
      p = line.predict(s);
      if (p.runs && p.bytes < 0) {
        p.runs = false;
        if (p.why.empty()) p.why = p.plan.unknown_reason.empty() ? "no prediction" : p.plan.unknown_reason;
      }
    }
    return seen.emplace(v, std::move(p)).first->second;
  };
  auto fitsOne = [&](int64_t v) {
    const FrontierPeak& p = at(v);
    return p.runs && p.bytes <= q.budget;
  };
  // seq: v and the values below it within one alignment period (each residue class grows).
  const int64_t period = q.vary == FrontierAxis::seq ? kFrontierSeqAlign : 1;
  const Candidates c = candidates(base, q.vary);
  if (c.count == 0) {
    pt.why = "no value of " + std::string(toString(q.vary)) + " divides the model width";
    return pt;
  }
  // The first candidate the line runs at (cuDNN refuses seq 1): the search starts there.
  int64_t start = 0;
  for (int64_t k = 1; k <= std::min<int64_t>(c.count, kFrontierStartScan) && start == 0; ++k)
    if (at(c.value(k)).runs) start = k;
  if (start == 0) {
    pt.why = "cannot run: " + at(c.value(1)).why;
    return pt;
  }
  // fits(k): candidates start..k all fit, checked on the last `period` of them (each residue
  // class grows, so that is the same and stays monotone in k).
  auto fits = [&](int64_t k) {
    for (int64_t u = k; u >= std::max(start, k - period + 1); --u)
      if (!fitsOne(c.value(u))) return false;
    return true;
  };
  // Doubling search over k for the first candidate that does not fit, then bisection.
  int64_t lo = start - 1, hi = 0;  // lo: largest k known to fit (start - 1: none); hi: smallest known not to (0: none)
  for (int64_t k = start;; k = std::min(start - 1 + 2 * (k - start + 1), c.count)) {
    if (fits(k)) {
      lo = k;
      if (k == c.count) break;
    } else {
      hi = k;
      break;
    }
  }
  if (hi == 0) {
    pt.unbounded = true;
  } else {
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
  }
  // seq: the multiples of the period are one residue class, which grows: the longest that fits.
  if (period > 1 && !pt.unbounded) {
    const int64_t n = c.count / period;
    int64_t alo = 0, ahi = 0;
    for (int64_t k = 1;; k = std::min(k * 2, n)) {
      if (fitsOne(k * period)) {
        alo = k;
        if (k == n) break;
      } else {
        ahi = k;
        break;
      }
    }
    if (ahi != 0)
      while (ahi - alo > 1) {
        const int64_t mid = alo + (ahi - alo) / 2;
        (fitsOne(mid * period) ? alo : ahi) = mid;
      }
    if (alo * period > (lo >= start ? c.value(lo) : 0)) pt.max_aligned = alo * period;
  }
  if (lo < start) {
    const FrontierPeak& first = at(c.value(start));
    pt.why = std::string(toString(q.vary)) + " " + std::to_string(c.value(start)) + " already needs " + formatBytes(first.bytes);
    pt.next_peak = first.bytes;
    pt.deciding = decidingBuffer(first.plan);
    return pt;
  }
  pt.max = c.value(lo);
  const FrontierPeak& best = at(pt.max);
  pt.peak_at_max = best.bytes;
  pt.kernel_at_max = best.kernel;
  if (!pt.unbounded) {
    pt.next = c.value(hi);
    const FrontierPeak& next = at(pt.next);
    pt.next_peak = next.runs ? next.bytes : -1;
    pt.deciding = next.runs ? decidingBuffer(next.plan) : "cannot run: " + next.why;
  }
  return pt;
}

std::vector<FrontierRow> computeFrontier(const FrontierQuery& q, const std::vector<FrontierLine>& lines) {
  if (q.vary == q.other)
    throw std::invalid_argument("--vary " + std::string(toString(q.vary)) + " and the other axis must differ (allowed: " +
                                std::string(kFrontierAxisChoices) + ")");
  if (q.budget <= 0) throw std::invalid_argument("--budget must be > 0 bytes");
  std::vector<FrontierRow> rows;
  for (const auto& line : lines) {
    FrontierRow r{line.name, {}};
    for (int64_t o : q.others) r.points.push_back(frontierPoint(q, line, o));
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<std::optional<torch_dispatch::SdpaKernel>> torchFrontierKernels(torch_dispatch::TorchDevice device) {
  using torch_dispatch::SdpaKernel;
  if (device == torch_dispatch::TorchDevice::cpu) return {std::nullopt, SdpaKernel::math, SdpaKernel::flash};
  return {std::nullopt, SdpaKernel::math, SdpaKernel::efficient, SdpaKernel::flash, SdpaKernel::cudnn};
}

std::string torchFrontierName(const torch_dispatch::TorchTarget& t, std::optional<torch_dispatch::SdpaKernel> kernel) {
  const auto& v = t.version;
  std::string name = "torch ";
  name += v.patch == 0 ? std::to_string(v.major) + "." + std::to_string(v.minor) : v.text();
  name += " ";
  name += t.device == torch_dispatch::TorchDevice::cpu ? "cpu" : t.gpu_name.empty() ? t.capability.text() : t.gpu_name;
  name += kernel ? " " : " (picks)";
  if (kernel) name += torch_dispatch::toString(*kernel);
  return name;
}

FrontierLine backendFrontierLine(const Backend& backend) {
  const Backend* b = &backend;
  return {b->id(), [b](const WorkloadSpec& s) {
            FrontierPeak p;
            const std::string absent = b->availability().reason;
            for (const auto& r : b->support(s).reasons)
              if (r != absent && r.rfind("GPU backends unavailable", 0) != 0) {
                p.why = r;
                return p;
              }
            p.plan = b->plan(s);
            p.runs = p.plan.known;
            p.bytes = p.plan.peakBytes();
            if (!p.plan.known) p.why = p.plan.unknown_reason;
            return p;
          }};
}

FrontierLine torchFrontierLine(std::string name, const torch_dispatch::TorchTarget& target,
                               std::optional<torch_dispatch::SdpaKernel> kernel) {
  using namespace torch_dispatch;
  return {std::move(name), [target, kernel](const WorkloadSpec& spec) {
            FrontierPeak p;
            if (spec.kind != WorkloadKind::attention) {
              p.why = "the explainer models one SDPA call (kind attention)";
              return p;
            }
            TorchTarget t = target;
            t.requires_grad = spec.pass == Pass::train;
            if (kernel) {
              const ForcedSdpa f = explainForcedSdpa(spec, t, *kernel);
              p.runs = f.verdict.usable;
              p.why = f.verdict.usable ? "" : f.verdict.rule;
              p.kernel = std::string(toString(*kernel));
              p.plan = f.memory.plan;
              p.bytes = f.verdict.usable ? f.memory.peakBytes() : -1;
            } else {
              const SdpaExplanation x = explainSdpa(spec, t, ExplainOptions{false});
              p.runs = x.chosen.has_value();
              p.why = x.chosen ? "" : x.error;
              p.kernel = x.chosen ? std::string(toString(*x.chosen)) : "";
              p.plan = x.memory.plan;
              p.bytes = x.chosen ? x.peakBytes() : -1;
            }
            return p;
          }};
}

// ---- GPU memory ------------------------------------------------------------------------------

namespace {

struct GpuMemory {
  std::string_view name;  // as knownGpus() spells it
  double gib;             // the maker's stated capacity of its most common variant
};

// The makers' spec sheets (HBM and GDDR sizes are binary: "16 GB" is 16 GiB; H200's 141 GB and
// B200's 192 GB HBM3e stacks too). The most common variant where there are several; a size word
// in the name ("A100-40GB", "V100 32GB") picks another.
const std::vector<GpuMemory>& gpuMemories() {
  static const std::vector<GpuMemory> m = {
      {"P100", 16},     {"P40", 24},        {"P4", 8},       {"V100", 16},       {"Titan V", 12},    {"T4", 16},
      {"RTX 2080", 8},  {"RTX 2080 Ti", 11}, {"Quadro RTX 6000", 24}, {"A100", 80}, {"A30", 24},     {"A800", 80},
      {"A10", 24},      {"A10G", 24},       {"A40", 48},     {"RTX A6000", 48},  {"RTX 3090", 24},   {"RTX 3080", 10},
      {"L4", 24},       {"L40", 48},        {"L40S", 48},    {"RTX 4090", 24},   {"RTX 4080", 16},   {"RTX 6000 Ada", 48},
      {"H100", 80},     {"H200", 141},      {"H800", 80},    {"H20", 96},        {"GH200", 96},      {"B200", 192},
      {"B300", 288},    {"RTX 5090", 32},   {"RTX 5080", 16}, {"RTX PRO 6000", 96},
  };
  return m;
}

// "40GB", "32gb", "80G", "16GiB" as a whole word of the name -> GiB.
std::optional<double> sizeWord(std::string_view text) {
  std::string word;
  auto check = [&]() -> std::optional<double> {
    std::string w;
    for (char ch : word) w += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t digits = 0;
    while (digits < w.size() && std::isdigit(static_cast<unsigned char>(w[digits]))) ++digits;
    const std::string unit = w.substr(digits);
    if (digits == 0 || digits > 4 || (unit != "gb" && unit != "g" && unit != "gib")) return std::nullopt;
    return std::stod(w.substr(0, digits));
  };
  for (size_t i = 0; i <= text.size(); ++i) {
    const char ch = i < text.size() ? text[i] : ' ';
    if (ch == ' ' || ch == '-' || ch == '_') {
      if (auto g = check()) return g;
      word.clear();
    } else {
      word += ch;
    }
  }
  return std::nullopt;
}

}  // namespace

std::string GpuBudget::describe() const {
  return gpu + " " + formatBytes(capacity) + " less " + formatBytes(reserve) + " reserve = " + formatBytes(budget());
}

std::optional<GpuBudget> gpuBudget(std::string_view text, std::optional<int64_t> reserve) {
  auto g = torch_dispatch::parseGpu(text);
  if (!g || g->name.empty()) return std::nullopt;
  std::optional<double> gib = sizeWord(text);
  if (!gib)
    for (const auto& m : gpuMemories())
      if (m.name == g->name) gib = m.gib;
  if (!gib) return std::nullopt;
  GpuBudget b;
  b.gpu = g->name;
  b.capacity = static_cast<int64_t>(std::llround(*gib * double(int64_t{1} << 30)));
  b.reserve = reserve.value_or(kGpuContextReserve + static_cast<int64_t>(std::llround(kGpuAllocatorShare * double(b.capacity))));
  if (b.reserve < 0 || b.reserve >= b.capacity) return std::nullopt;
  return b;
}

std::string knownGpuMemories() {
  std::string s;
  for (const auto& m : gpuMemories()) {
    if (!s.empty()) s += ", ";
    s += std::string(m.name) + " " + std::to_string(static_cast<int>(m.gib)) + " GiB";
  }
  return s;
}

}  // namespace attnscope
