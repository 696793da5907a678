#include "core/torch_dispatch/sdpa_explain.h"

#include <algorithm>

namespace attnscope::torch_dispatch {

namespace {

KernelVerdict verdictFor(SdpaKernel k, const SdpaCall& call, const TorchTarget& t, std::string via) {
  KernelVerdict v;
  v.kernel = k;
  v.via = std::move(via);
  if (auto f = firstFailingRule(k, call, t)) {
    v.rule_id = f->rule->id;
    v.rule = f->rule->rule;
    v.torch_message = f->message;
    v.source = f->rule->source;
  } else {
    v.usable = true;
  }
  return v;
}

void addNotes(std::vector<std::string>& to, const std::vector<std::string>& from) {
  for (const auto& n : from)
    if (std::find(to.begin(), to.end(), n) == to.end()) to.push_back(n);
}

// SDPA's own selection (select_sdp_backend / select_sdp_backend_cpp) on a call with no bias object.
void selectOnCall(SdpaExplanation& x, const SdpaCall& call, LowerRightPath path, const std::string& via) {
  x.order = sdpaPriorityOrder(call, x.target);
  addNotes(x.notes, x.order.notes);
  for (SdpaKernel k : x.order.kernels) {
    KernelVerdict v = verdictFor(k, call, x.target, via);
    if (v.usable && !x.chosen) {
      v.chosen = true;
      x.chosen = k;
      x.memory = sdpaMemory(k, call, x.target, path);
    }
    addNotes(x.notes, ruleNotes(k, call, x.target));
    x.verdicts.push_back(std::move(v));
  }
}

void explainCall(SdpaExplanation& x) {
  const SdpaCall& call = x.call;
  const TorchTarget& t = x.target;
  if (call.mask == SdpaMaskPassing::causal_lower_right) {
    // torch/nn/attention/bias.py CausalBias._dispatch: flash, then efficient on a mask-less call
    // (can_use_* is False for CPU tensors), else a materialised bool [Lq, Lkv] mask through SDPA.
    SdpaCall bare = call;
    bare.mask = SdpaMaskPassing::none;
    const std::string via = "causal_lower_right bias";
    for (SdpaKernel k : {SdpaKernel::flash, SdpaKernel::efficient}) {
      KernelVerdict v;
      if (t.device == TorchDevice::cpu) {
        v.kernel = k;
        v.via = via;
        v.rule_id = "bias.cuda_only";
        v.rule = "the bias calls the flash/efficient kernels directly only for CUDA tensors";
        v.torch_message = "All tensors need to be on cuda device.";
        v.source = "torch/nn/attention/bias.py CausalBias._dispatch (2.15 wheel) [bin]";
      } else {
        v = verdictFor(k, bare, t, via);
      }
      if (v.usable && !x.chosen) {
        v.chosen = true;
        x.chosen = k;
        x.memory = sdpaMemory(k, call, t, k == SdpaKernel::flash ? LowerRightPath::flash_kernel : LowerRightPath::efficient_kernel);
      }
      x.verdicts.push_back(std::move(v));
    }
    x.notes.push_back(t.device == TorchDevice::cpu
                          ? "causal_lower_right on the CPU: a materialised bool mask through SDPA (measured on every release 2.3-2.15)"
                          : "causal_lower_right dispatch read from torch/nn/attention/bias.py of the 2.15 wheel; assumed the same since 2.3");
    if (x.chosen) {
      x.order = {{SdpaKernel::flash, SdpaKernel::efficient}, "causal_lower_right bias: flash, then efficient, else a materialised mask",
                 "torch/nn/attention/bias.py [bin]", {}};
      return;
    }
    SdpaCall materialised = call;
    materialised.mask = SdpaMaskPassing::bool_tensor;
    materialised.mask_shape = {call.seq_q, call.seq_kv};
    // The verdicts so far stay in front of SDPA's own order.
    std::vector<KernelVerdict> bias_verdicts = std::move(x.verdicts);
    x.verdicts.clear();
    selectOnCall(x, materialised, LowerRightPath::materialised, "materialised causal_lower_right mask");
    x.verdicts.insert(x.verdicts.begin(), bias_verdicts.begin(), bias_verdicts.end());
    return;
  }
  selectOnCall(x, call, LowerRightPath::not_used, "");
}

void finishNotes(SdpaExplanation& x) {
  const auto& t = x.target;
  if (x.chosen) {
    if (auto e = sdpaRunError(*x.chosen, x.call, t)) x.error = *e;
  }
  if (t.device == TorchDevice::cuda) {
    const WheelFacts w = pypiWheel(t.version);
    if (!w.has_sm70 && t.capability.number() < 75)
      x.notes.push_back("the PyPI wheel of torch " + t.version.text() + " (CUDA " + std::to_string(w.cuda_major) +
                        ") has no kernels for " + t.capability.text() + "; this assumes a build that does (e.g. cu126/cu128)");
    if (!w.documented) x.notes.push_back("torch " + t.version.text() + " is not in the reference's release table; its CUDA/cuDNN versions are assumed between 2.12 and 2.14");
  }
  addNotes(x.notes, x.memory.notes);
}

int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

void addSuggestions(SdpaExplanation& x) {
  struct Candidate {
    std::string change;
    WorkloadSpec spec;
    TorchTarget target;
  };
  std::vector<Candidate> cands;
  const WorkloadSpec& s = x.spec;
  const TorchTarget& t = x.target;
  const int64_t d = s.headDim();
  auto withHeadDim = [&](int64_t nd) {
    WorkloadSpec n = s;
    n.width = 0;
    n.head_dim = nd;
    return n;
  };
  for (int64_t a : {int64_t(8), int64_t(4)})
    // (4 only where it gives another size than 8: 6 rounds to 8 either way.)
    if (d % a != 0 && roundUp(d, a) <= kMaxHeadDim && (a == 8 || roundUp(d, 4) != roundUp(d, 8)))
      cands.push_back({"pad head_dim " + std::to_string(d) + " -> " + std::to_string(roundUp(d, a)) +
                           " with zeros (q, k, v; pass scale=1/sqrt(" + std::to_string(d) + "), slice the output)",
                       withHeadDim(roundUp(d, a)), t});
  if (s.width > 0)
    for (int64_t h = s.heads - 1; h >= 1; --h)
      if (s.width % h == 0 && (s.kv_heads == 0 || h % s.kvHeads() == 0)) {
        WorkloadSpec n = s;
        n.heads = h;
        cands.push_back({"heads " + std::to_string(s.heads) + " -> " + std::to_string(h) + " (head_dim " + std::to_string(s.width / h) + ")", n, t});
      }
  if (s.mask.kind == MaskKind::dense || s.mask.kind == MaskKind::window || s.mask.kind == MaskKind::block) {
    WorkloadSpec n = s;
    n.mask = MaskSpec{MaskKind::causal};
    cands.push_back({"is_causal=True instead of the bool mask (same result only if the mask is causal)", n, t});
    if (s.mask_layout == MaskLayout::per_head) {
      WorkloadSpec b = s;
      b.mask_layout = MaskLayout::broadcast;
      cands.push_back({"mask [1,1,L,S] broadcast instead of [B,H,L,S]", b, t});
    }
  }
  for (DType dt : {DType::fp32, DType::fp16, DType::bf16})
    if (dt != s.dtype) {
      WorkloadSpec n = s;
      n.dtype = dt;
      cands.push_back({"dtype " + std::string(toString(dt)), n, t});
    }
  if (x.chosen == SdpaKernel::math && s.dtype != DType::fp32 && t.version >= TorchVersion{2, 5, 0} && !t.allow_fp16_bf16_reduction_math) {
    TorchTarget n = t;
    n.allow_fp16_bf16_reduction_math = true;
    cands.push_back({"torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True) (math in " + std::string(toString(s.dtype)) + ", no fp32 copies)", s, n});
  }
  // Other releases: the cheapest one (ties: the newest), as one suggestion.
  std::optional<Candidate> best_version;
  int64_t best_peak = x.peakBytes();
  for (const auto& v : coveredTorchVersions()) {
    if (v.minor == t.version.minor && v.patch == t.version.patch) continue;
    TorchTarget n = defaultTorchTarget(v, t.device, t.capability);
    n.gpu_name = t.gpu_name;
    n.cpu_threads = t.cpu_threads;
    auto e = explainSdpa(s, n, ExplainOptions{false});
    if (e.chosen && e.error.empty() && e.peakBytes() <= best_peak) {
      best_peak = e.peakBytes();
      best_version = Candidate{"torch " + v.text() + " (PyPI build)", s, n};
    }
  }
  if (best_version) cands.push_back(*best_version);

  for (const auto& c : cands) {
    if (!validate(c.spec).empty()) continue;
    auto e = explainSdpa(c.spec, c.target, ExplainOptions{false});
    if (!e.chosen || !e.error.empty() || e.peakBytes() >= x.peakBytes()) continue;
    x.suggestions.push_back({c.change, *e.chosen, e.peakBytes(), e.extraBytes(), c.spec, c.target});
  }
  // Fewer heads: keep only the largest head count that helps.
  bool heads_seen = false;
  std::erase_if(x.suggestions, [&](const SdpaSuggestion& g) {
    if (!g.change.starts_with("heads ")) return false;
    if (heads_seen) return true;
    heads_seen = true;
    return false;
  });
  std::stable_sort(x.suggestions.begin(), x.suggestions.end(),
                   [](const SdpaSuggestion& a, const SdpaSuggestion& b) { return a.peak_bytes < b.peak_bytes; });
}

}  // namespace

std::optional<std::string> sdpaRunError(SdpaKernel kernel, const SdpaCall& call, const TorchTarget& t) {
  // Measured with each release's wheel (scripts/measure_torch_release.sh): CPU math in fp16
  // raises in 2.0 and 2.1; from 2.2 the CPU has a Half GEMM.
  // validate_sdpa_input: a float mask in q's dtype, or (from 2.4) fp32 (measured on 2.3.1 and 2.4.1).
  if (call.hasFloatMask() && call.mask_dtype != call.dtype && t.version < TorchVersion{2, 4, 0})
    return "Expected attn_mask dtype to be bool or to match query dtype, but got attn_mask.dtype: " +
           std::string(call.mask_dtype == DType::fp32 ? "float" : call.mask_dtype == DType::fp16 ? "c10::Half" : "c10::BFloat16") +
           " and  query.dtype: " + (call.dtype == DType::fp32 ? "float" : call.dtype == DType::fp16 ? "c10::Half" : "c10::BFloat16") +
           " instead.";
  if (t.device == TorchDevice::cpu && kernel == SdpaKernel::math && call.dtype == DType::fp16 && t.version < TorchVersion{2, 2, 0})
    return "CPU math in fp16 fails in torch " + t.version.text() + ": \"baddbmm_with_gemm\" not implemented for 'Half'";
  return std::nullopt;
}

std::string SdpaExplanation::headline() const {
  if (!chosen) return "torch would raise: " + error;
  std::string s = "torch would pick " + std::string(toString(*chosen));
  for (const auto& v : verdicts) {
    if (v.chosen) break;
    if (!v.usable) {
      s += " (" + std::string(toString(v.kernel)) + ": " + v.rule + ")";
      break;
    }
  }
  return s;
}

SdpaExplanation explainSdpa(const WorkloadSpec& spec, const TorchTarget& target, ExplainOptions options) {
  return explainSdpa(spec, target, sdpaCallFor(spec, target.version), options);
}

SdpaExplanation explainSdpa(const WorkloadSpec& spec, const TorchTarget& target, const SdpaCall& call, ExplainOptions options) {
  SdpaExplanation x;
  x.spec = spec;
  x.target = target;
  x.call = call;
  explainCall(x);
  if (!x.chosen) x.error = "No available kernel. Aborting execution.";
  finishNotes(x);
  if (options.suggestions && x.chosen) addSuggestions(x);
  return x;
}

ForcedSdpa explainForcedSdpa(const WorkloadSpec& spec, const TorchTarget& target, SdpaKernel kernel) {
  const SdpaCall call = sdpaCallFor(spec, target.version);
  ForcedSdpa f;
  if (target.device == TorchDevice::cpu && target.version < TorchVersion{2, 1, 0} && kernel != SdpaKernel::math) {
    // torch 2.0 has no CPU dispatch: sdp_kernel's switches are not read and math runs whatever
    // is forced (measured on 2.0.1 with flash forced).
    f.verdict.kernel = SdpaKernel::math;
    f.verdict.usable = f.verdict.chosen = true;
    f.verdict.via = "torch 2.0 on the CPU ignores the forced " + std::string(toString(kernel)) + " and runs math";
    f.memory = sdpaMemory(SdpaKernel::math, call, target);
    return f;
  }
  if (call.mask == SdpaMaskPassing::causal_lower_right) {
    // With only `kernel` enabled the bias still tries flash/efficient directly, then SDPA with
    // the materialised mask.
    SdpaCall bare = call;
    bare.mask = SdpaMaskPassing::none;
    if (target.device == TorchDevice::cuda && (kernel == SdpaKernel::flash || kernel == SdpaKernel::efficient)) {
      f.verdict = verdictFor(kernel, bare, target, "causal_lower_right bias");
      if (f.verdict.usable) {
        f.memory = sdpaMemory(kernel, call, target,
                              kernel == SdpaKernel::flash ? LowerRightPath::flash_kernel : LowerRightPath::efficient_kernel);
        f.verdict.chosen = true;
        return f;
      }
    }
    SdpaCall materialised = call;
    materialised.mask = SdpaMaskPassing::bool_tensor;
    materialised.mask_shape = {call.seq_q, call.seq_kv};
    f.verdict = verdictFor(kernel, materialised, target, "materialised causal_lower_right mask");
    if (f.verdict.usable) f.memory = sdpaMemory(kernel, materialised, target, LowerRightPath::materialised);
  } else {
    f.verdict = verdictFor(kernel, call, target, "");
    if (f.verdict.usable) f.memory = sdpaMemory(kernel, call, target);
  }
  f.verdict.chosen = f.verdict.usable;
  return f;
}

}  // namespace attnscope::torch_dispatch
