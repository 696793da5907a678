#include "core/torch_dispatch/explain_grid.h"

#include <cstdlib>

#include <nlohmann/json.hpp>

namespace attnscope::torch_dispatch {

namespace {

struct Shape {
  int64_t b, h, kv, lq, lkv;
};

// Shapes that exercise every branch the rules and formulas have: seq 1, Lq < Lkv, Lq > Lkv, GQA,
// MQA decode, and the three CPU flash q-split sizes (32 below 192, 64 below 768, 256).
const std::vector<Shape>& shapes(GridSize size) {
  static const std::vector<Shape> wide{{1, 1, 1, 1, 1},    {2, 4, 4, 64, 64},   {1, 3, 3, 33, 77},
                                       {2, 4, 4, 130, 17}, {1, 8, 2, 48, 48},   {2, 4, 1, 1, 40},
                                       {1, 2, 2, 200, 200}, {1, 2, 2, 800, 800}};
  static const std::vector<Shape> quick{{2, 4, 4, 64, 64}, {1, 3, 3, 33, 77}, {1, 8, 2, 48, 48}, {1, 2, 2, 200, 200}};
  return size == GridSize::wide ? wide : quick;
}

const std::vector<int64_t> kHeadDims{1, 5, 8, 64, 100, 256, 320, 512};

struct MaskCase {
  const char* mask;
  MaskLayout layout;
};
const std::vector<MaskCase> kMasks{{"none", MaskLayout::broadcast},      {"causal", MaskLayout::broadcast},
                                   {"dense", MaskLayout::broadcast},     {"dense:0.5", MaskLayout::per_head},
                                   {"window:16", MaskLayout::broadcast}, {"block:8", MaskLayout::broadcast},
                                   {"additive", MaskLayout::broadcast},  {"additive:0.5", MaskLayout::per_head}};

const DType kDTypes[] = {DType::fp32, DType::fp16, DType::bf16};

std::string kernelName(const std::optional<SdpaKernel>& k) { return k ? std::string(toString(*k)) : std::string("error"); }

}  // namespace

std::vector<GridCase> explainGrid(GridSize size) {
  std::vector<GridCase> out;
  const auto& sh = shapes(size);
  const size_t per_combo = size == GridSize::wide ? 2 : 1;
  for (size_t si = 0; si < sh.size(); ++si)
    for (size_t mi = 0; mi < kMasks.size(); ++mi)
      for (size_t di = 0; di < std::size(kDTypes); ++di)
        for (int train = 0; train < 2; ++train)
          for (size_t pick = 0; pick < per_combo; ++pick) {
            // Head dims rotate over the combinations so that each one meets every shape, mask,
            // dtype and pass without the full product.
            const size_t hi = (si * 3 + mi * 5 + di * 7 + train + pick * 4) % kHeadDims.size();
            const Shape s = sh[si];
            WorkloadSpec w;
            w.batch = s.b;
            w.heads = s.h;
            w.kv_heads = s.kv == s.h ? 0 : s.kv;
            w.seq_q = s.lq;
            w.seq_kv = s.lkv == s.lq ? 0 : s.lkv;
            w.head_dim = kHeadDims[hi];
            // The large shape only with small head dims: its math path is what costs time.
            if (s.lq >= 800 && w.head_dim > 64) w.head_dim = 8;
            w.dtype = kDTypes[di];
            w.mask = *parseMask(kMasks[mi].mask).mask;
            w.mask_layout = kMasks[mi].layout;
            // Additive masks alternate between q's dtype and fp32 (the two torch accepts).
            if (w.mask.kind == MaskKind::additive && w.dtype != DType::fp32 && (pick + train) % 2 == 1) w.mask_dtype = DType::fp32;
            w.pass = train ? Pass::train : Pass::forward;
            if (!validate(w).empty()) continue;  // block needs Lq == Lkv; head_dim beyond the spec's limit
            GridCase c{w, std::nullopt, train == 1};
            out.push_back(c);
            // Forced kernels: math for a third of the cases, flash for a fifth (where flash
            // cannot run, torch raises and so must the prediction).
            const size_t n = out.size();
            if (n % 3 == 0) out.push_back({w, SdpaKernel::math, train == 1});
            if (n % 5 == 0) out.push_back({w, SdpaKernel::flash, train == 1});
          }
  return out;
}

nlohmann::json measureCaseJson(const GridCase& g, const TorchVersion& version, int threads, size_t id, TorchDevice device) {
  const SdpaCall c = sdpaCallFor(g.spec, version);
  nlohmann::json j{{"id", id},
                   {"device", device == TorchDevice::cuda ? "cuda" : "cpu"},
                   {"B", c.batch},
                   {"H", c.q_heads},
                   {"Hkv", c.kv_heads},
                   {"L", c.seq_q},
                   {"S", c.seq_kv},
                   {"D", c.head_dim},
                   {"Dv", c.head_dim_v},
                   {"dtype", toString(c.dtype)},
                   {"mask", toString(c.mask)},
                   {"mask_shape", c.mask_shape},
                   {"enable_gqa", c.enable_gqa},
                   {"threads", threads},
                   {"requires_grad", g.training}};
  if (c.hasFloatMask()) j["mask_dtype"] = toString(c.mask_dtype);
  if (g.force) j["force"] = toString(*g.force);
  return j;
}

GridPrediction predictGridCase(const GridCase& g, const TorchTarget& target) {
  TorchTarget t = target;
  t.requires_grad = g.training;
  GridPrediction p;
  SdpaMemory memory;
  if (g.force) {
    ForcedSdpa f = explainForcedSdpa(g.spec, t, *g.force);
    if (!f.verdict.usable) {
      p.error = "No available kernel. Aborting execution.";
      return p;
    }
    p.kernel = f.verdict.kernel;  // the forced kernel, or what runs instead (math on 2.0's CPU)
    memory = std::move(f.memory);
    if (auto e = sdpaRunError(*p.kernel, sdpaCallFor(g.spec, t.version), t)) {
      p.kernel.reset();
      p.error = *e;
      return p;
    }
  } else {
    SdpaExplanation x = explainSdpa(g.spec, t, ExplainOptions{false});
    if (!x.chosen || !x.error.empty()) {
      p.error = x.error;
      return p;
    }
    p.kernel = x.chosen;
    memory = std::move(x.memory);
  }
  p.extra_bytes = memory.forwardExtraBytes();
  if (g.training) {
    p.kept_bytes = memory.keptBytes();
    p.backward_extra_bytes = memory.backwardExtraBytes();
  }
  return p;
}

GridVerdict compareGridCase(const GridCase& g, const GridPrediction& p, const nlohmann::json& r, int64_t tolerance) {
  GridVerdict v;
  const bool measured_error = r.contains("error");
  if (measured_error || !p.kernel) {
    v.kernel_ok = measured_error && !p.kernel;
    v.memory_ok = v.kernel_ok;
    if (!v.kernel_ok)
      v.problem = measured_error ? "torch raised (" + r["error"].get<std::string>() + "), explain predicts " + kernelName(p.kernel)
                                 : "explain predicts an error (" + p.error + "), torch ran " + r.value("ran", std::string("?"));
    return v;
  }
  const std::string ran = r.value("ran", std::string("?"));
  v.kernel_ok = ran == toString(*p.kernel);
  // torch._fused_sdp_choice (where this release has one) says what SDPA would pick unforced.
  if (!g.force && r.contains("choice") && r["choice"].is_number()) {
    const auto choice = kernelFromFusedSdpChoice(r["choice"].get<int>());
    if (!choice || *choice != *p.kernel) v.kernel_ok = false;
  }
  std::string problem;
  if (!v.kernel_ok)
    problem = "kernel: torch ran " + ran + " (_fused_sdp_choice " + (r.contains("choice") ? r["choice"].dump() : "-") +
              "), explain " + kernelName(p.kernel);
  v.memory_ok = true;
  auto check = [&](const char* key, int64_t predicted) {
    if (!r.contains(key)) {
      v.memory_ok = false;
      problem += std::string(problem.empty() ? "" : "; ") + key + " not measured";
      return;
    }
    const int64_t measured = r[key].get<int64_t>();
    const int64_t diff = std::llabs(measured - predicted);
    v.worst_diff = std::max(v.worst_diff, diff);
    if (diff > tolerance) {
      v.memory_ok = false;
      problem += std::string(problem.empty() ? "" : "; ") + key + ": measured " + std::to_string(measured) + " predicted " +
                 std::to_string(predicted) + " (" + (measured > predicted ? "+" : "") + std::to_string(measured - predicted) + ")";
    }
  };
  check("extra_bytes", p.extra_bytes);
  if (g.training) {
    check("kept_bytes", p.kept_bytes);
    check("backward_extra_bytes", p.backward_extra_bytes);
  }
  v.problem = problem;
  return v;
}

std::string describeGridCase(const GridCase& g) {
  std::string s = summary(g.spec);
  if (g.spec.mask_layout == MaskLayout::per_head) s += " per_head";
  if (g.training && g.spec.pass != Pass::train) s += " train";
  if (g.force) s += " force=" + std::string(toString(*g.force));
  return s;
}

}  // namespace attnscope::torch_dispatch
