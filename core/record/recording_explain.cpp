#include "core/record/recording_explain.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "core/base/format.h"
#include "core/spec/spec_fields.h"

namespace attnscope {

using namespace torch_dispatch;

namespace {

std::optional<DType> dtypeOf(const std::string& torch_name) {
  if (torch_name == "float32") return DType::fp32;
  if (torch_name == "float16") return DType::fp16;
  if (torch_name == "bfloat16") return DType::bf16;
  return std::nullopt;
}

}  // namespace

std::string ranKernel(const RecordedCall& c) {
  if (!c.ran.empty()) return c.ran;
  return c.aten_ops.empty() ? std::string() : c.aten_ops.front();
}

RecordedWorkload recordedWorkload(const RecordedCall& c, const TorchVersion& version) {
  RecordedWorkload w;
  if (c.op != "scaled_dot_product_attention" && c.op != "_native_multi_head_attention") {
    w.problem = "the op " + c.op + " is not scaled_dot_product_attention";
    return w;
  }
  const auto& q = c.q.shape;
  const auto& k = c.k.shape;
  const auto& v = c.v.shape;
  if (q.size() < 3 || q.size() > 4 || k.size() != q.size() || v.size() != q.size()) {
    w.problem = "q, k and v of " + std::to_string(q.size()) + ", " + std::to_string(k.size()) + " and " +
                std::to_string(v.size()) + " dimensions (the explainer models [B, H, L, D] and [H, L, D])";
    return w;
  }
  const size_t n = q.size();
  const auto dt = dtypeOf(c.q.dtype);
  if (!dt || c.k.dtype != c.q.dtype || c.v.dtype != c.q.dtype) {
    w.problem = "dtype " + c.q.dtype + (c.k.dtype != c.q.dtype || c.v.dtype != c.q.dtype ? " (k/v " + c.k.dtype + ")" : "") +
                " is not modelled (float32, float16, bfloat16)";
    return w;
  }
  SdpaCall call;
  call.batch = n == 4 ? q[0] : 1;
  call.q_heads = q[n - 3];
  call.kv_heads = k[n - 3];
  call.seq_q = q[n - 2];
  call.seq_kv = k[n - 2];
  call.head_dim = q[n - 1];
  call.head_dim_v = v[n - 1];
  call.dtype = *dt;
  call.dropout_p = c.dropout_p;
  if (k[n - 1] != call.head_dim) {
    w.problem = "k's head_dim " + std::to_string(k[n - 1]) + " differs from q's " + std::to_string(call.head_dim);
    return w;
  }
  WorkloadSpec s;
  s.batch = call.batch;
  s.heads = call.q_heads;
  s.kv_heads = call.kv_heads == call.q_heads ? 0 : call.kv_heads;
  s.seq_q = call.seq_q;
  s.seq_kv = call.seq_kv == call.seq_q ? 0 : call.seq_kv;
  s.head_dim = call.head_dim;
  s.width = 0;
  s.dtype = *dt;
  s.scale = c.scale;
  if (call.head_dim_v != call.head_dim)
    w.notes.push_back("v's head_dim " + std::to_string(call.head_dim_v) + " differs from q's: a sweep of this call uses " +
                      std::to_string(call.head_dim) + " for both");
  if (call.kv_heads != call.q_heads) {
    call.enable_gqa = c.enable_gqa;
    if (!c.enable_gqa) w.notes.push_back("k/v have fewer heads than q without enable_gqa=True: torch refuses such a call");
  }
  if (c.mask.kind == "none") {
    if (c.is_causal) {
      call.mask = SdpaMaskPassing::is_causal;
      s.mask.kind = MaskKind::causal;
      if (call.seq_q != call.seq_kv)
        w.notes.push_back("is_causal with Lq != Lkv is top-left in torch; AttnScope's causal mask is bottom-right "
                          "(the same cost, other rows masked)");
    }
  } else {
    call.mask = SdpaMaskPassing::bool_tensor;
    call.mask_shape = c.mask.shape;
    while (call.mask_shape.size() < 2) call.mask_shape.insert(call.mask_shape.begin(), 1);
    if (call.mask_shape.size() == 3) call.mask_shape.insert(call.mask_shape.begin(), 1);
    s.mask.kind = MaskKind::dense;
    const bool per_head = call.mask_shape.size() == 4 && call.mask_shape[0] == call.batch &&
                          call.mask_shape[1] == call.q_heads && call.mask_shape[2] == call.seq_q &&
                          call.batch * call.q_heads > 1;
    s.mask_layout = per_head ? MaskLayout::per_head : MaskLayout::broadcast;
    if (c.mask.kind == "float") {
      // An additive mask: added as it is. The recording does not carry its float type.
      call.mask = SdpaMaskPassing::float_tensor;
      call.mask_dtype = call.dtype;
      s.mask.kind = MaskKind::additive;
      w.notes.push_back("a float mask is priced in q's dtype (" + std::string(toString(call.dtype)) +
                        "); the recording does not say its type");
    }
    const bool spec_shape = call.mask_shape == std::vector<int64_t>{1, 1, call.seq_q, call.seq_kv} ||
                            call.mask_shape == std::vector<int64_t>{call.seq_q, call.seq_kv} || per_head;
    if (!spec_shape)
      w.notes.push_back("the mask " + shapeText(c.mask.shape) +
                        " is priced as given; a sweep of this call uses a broadcast [1,1,Lq,Lkv] mask");
    if (c.is_causal) w.notes.push_back("is_causal=True with an attn_mask: torch raises");
  }
  if (c.dropout_p > 0) w.notes.push_back("dropout_p " + shortestText(c.dropout_p) + ": AttnScope's workloads have no dropout");
  if (!c.q.contiguous || !c.k.contiguous || !c.v.contiguous)
    w.notes.push_back("q, k or v is not contiguous (strides " + shapeText(c.q.stride) + "): a copy may be made");
  if (c.op == "_native_multi_head_attention")
    w.notes.push_back("nn.MultiheadAttention's fast path (torch._native_multi_head_attention): q/k/v are its per-head "
                      "shapes; the projections inside it are not in this call's numbers");
  (void)version;
  if (validate(s).empty()) w.spec = s;
  else w.notes.push_back("not a valid AttnScope workload: " + describe(validate(s)));
  w.call = call;
  return w;
}

std::optional<TorchTarget> recordedTarget(const Recording& r, std::string* problem) {
  const std::string torch = r.torch.value("torch", std::string());
  auto v = parseTorchVersion(torch);
  if (!v) {
    if (problem)
      *problem = torch.empty() ? "the recording does not say which torch ran it"
                               : "torch " + torch + " has no rules in this build (" + std::string(kTorchVersionRange) + ")";
    return std::nullopt;
  }
  bool cuda = false;
  for (const RecordedCall& c : r.calls) cuda = cuda || c.q.device.starts_with("cuda");
  TorchTarget t = defaultTorchTarget(*v, cuda ? TorchDevice::cuda : TorchDevice::cpu);
  if (auto it = r.torch.find("threads"); it != r.torch.end() && it->is_number_integer() && it->get<int>() > 0)
    t.cpu_threads = it->get<int>();
  if (auto it = r.torch.find("cpu_amx"); it != r.torch.end() && it->is_array())  // the recording machine's AMX
    for (const auto& f : *it) {
      if (f == "amx_bf16") t.cpu_amx_bf16 = true;
      if (f == "amx_fp16") t.cpu_amx_fp16 = true;
    }
  if (cuda) {
    if (auto d = r.torch.find("cuda_devices"); d != r.torch.end() && d->is_array() && !d->empty() && (*d)[0].is_object()) {
      const auto& dev = (*d)[0];
      if (auto g = parseGpu(dev.value("capability", std::string()))) t.capability = g->capability;
      if (auto g = parseGpu(dev.value("name", std::string()))) {
        t.capability = g->capability;
        t.gpu_name = g->name;
      }
    }
    if (auto c = parseCudnnVersion(r.torch.value("torch_cudnn", std::string()))) t.cudnn = *c;
    const std::string cu = r.torch.value("torch_cuda", std::string());
    if (!cu.empty() && std::isdigit(static_cast<unsigned char>(cu[0]))) t.cuda_major = std::stoi(cu);
  }
  return t;
}

CallVerdict explainRecordedCall(const RecordedCall& c, const TorchTarget& target, bool recorded_env) {
  CallVerdict out;
  out.workload = recordedWorkload(c, target.version);
  if (!out.workload.problem.empty() || !out.workload.spec) return out;
  TorchTarget t = target;
  t.requires_grad = c.requires_grad;
  SdpaCall call = out.workload.call;
  if (call.kv_heads != call.q_heads && !call.enable_gqa && t.version < TorchVersion{2, 5, 0}) call.kv_repeated = true;
  out.x = explainSdpa(*out.workload.spec, t, call);
  const SdpaExplanation& x = *out.x;
  if (x.chosen) {
    out.predicted = std::string(toString(*x.chosen));
    out.predicted_bytes = x.extraBytes();
  } else {
    out.predicted = "raises";
  }
  for (const KernelVerdict& v : x.verdicts) {
    if (v.chosen) break;
    if (!v.usable) {
      out.first_rejection = std::string(toString(v.kernel)) + ": " + v.rule +
                            (v.torch_message.empty() ? std::string() : " (torch: \"" + v.torch_message + "\")");
      break;
    }
  }
  // A mask of one row per batch and head ([B,1,1,S], [B,H,1,S]: key padding) is not a causal one:
  // "is_causal instead of the mask" would be wrong advice for it.
  const bool row_mask = call.hasMaskTensor() && call.mask_shape.size() >= 2 && call.mask_shape[call.mask_shape.size() - 2] == 1 &&
                        call.seq_q > 1;
  if (row_mask)
    std::erase_if(out.x->suggestions, [](const SdpaSuggestion& g) { return g.change.starts_with("is_causal"); });
  if (!out.x->suggestions.empty()) out.cheapest = out.x->suggestions.front();
  const std::string ran = ranKernel(c);
  out.mismatch = recorded_env && !ran.empty() && c.raised.empty() && ran != out.predicted;
  return out;
}

namespace {

nlohmann::json nullable(int64_t v) { return v < 0 ? nlohmann::json(nullptr) : nlohmann::json(v); }

nlohmann::json statsJson(const RecordedStats& s) {
  return {{"count", s.count},
          {"time_s", s.meanTime()},
          {"time_total_s", s.time_total_s},
          {"time_min_s", s.time_min_s},
          {"time_max_s", s.time_max_s},
          {"memory_measured", s.memory_measured},
          {"measured_bytes", s.memory_measured > 0 ? nlohmann::json(s.bytes_max) : nlohmann::json(nullptr)}};
}

}  // namespace

std::optional<TorchTarget> retargetRecording(const Recording& r, const std::optional<TorchVersion>& torch,
                                             const std::optional<std::string>& gpu, const std::optional<CudnnVersion>& cudnn) {
  if (!torch && !gpu && !cudnn) return std::nullopt;
  const std::optional<TorchTarget> recorded = recordedTarget(r, nullptr);
  const TorchVersion version = torch ? *torch : recorded ? recorded->version : kNewestTorch;
  TorchDevice device = recorded ? recorded->device : TorchDevice::cpu;
  ComputeCapability cc = recorded ? recorded->capability : ComputeCapability{8, 0};
  std::string gpu_name = recorded ? recorded->gpu_name : std::string();
  if (gpu && *gpu == "cpu") {
    device = TorchDevice::cpu;
  } else if (gpu) {
    const auto g = parseGpu(*gpu);
    if (!g) return std::nullopt;
    device = TorchDevice::cuda;
    cc = g->capability;
    gpu_name = g->name;
  }
  TorchTarget t = defaultTorchTarget(version, device, cc);
  t.gpu_name = gpu_name;
  if (recorded) t.cpu_threads = recorded->cpu_threads;
  if (cudnn) t.cudnn = *cudnn;
  return t;
}

std::string kernelChange(const CallVerdict& recorded, const CallVerdict& target) {
  if (target.predicted.empty() || target.predicted == recorded.predicted) return {};
  std::string change = recorded.predicted + " -> " + target.predicted;
  if (target.predicted_bytes >= 0 && recorded.predicted_bytes >= 0) {
    const int64_t d = target.predicted_bytes - recorded.predicted_bytes;
    change += concat(": ", d >= 0 ? "+" : "-", formatBytes(d >= 0 ? d : -d));
  }
  return change;
}

std::string onTargetText(const CallVerdict& target) {
  if (target.predicted.empty()) return "?";
  return target.predicted + " " + (target.predicted_bytes < 0 ? std::string("-") : formatBytes(target.predicted_bytes));
}

std::string recordedMaskText(const RecordedCall& c) {
  if (c.mask.kind == "none") return c.is_causal ? "is_causal" : "none";
  return c.mask.kind + " " + shapeText(c.mask.shape) +
         (c.mask.materialised ? " materialised" : c.mask.broadcast ? " broadcast" : "");
}

nlohmann::json recordingJson(const Recording& r, const std::optional<TorchTarget>& target) {
  std::string problem;
  const std::optional<TorchTarget> recorded = recordedTarget(r, &problem);
  nlohmann::json calls = nlohmann::json::array();
  for (const RecordedCall& c : r.calls) {
    nlohmann::json j = {{"row", c.row},
                        {"ref", r.idText() + ":" + std::to_string(c.row)},
                        {"op", c.op},
                        {"site", c.site},
                        {"module", c.module},
                        {"count", c.forward.count},
                        {"q_shape", c.q.shape},
                        {"k_shape", c.k.shape},
                        {"v_shape", c.v.shape},
                        {"q_stride", c.q.stride},
                        {"dtype", c.q.dtype},
                        {"device", c.q.device},
                        {"mask", recordedMaskText(c)},
                        {"mask_kind", c.mask.kind},
                        {"mask_shape", c.mask.shape},
                        {"is_causal", c.is_causal},
                        {"dropout_p", c.dropout_p},
                        {"scale", c.scale ? nlohmann::json(*c.scale) : nlohmann::json(nullptr)},
                        {"enable_gqa", c.enable_gqa},
                        {"requires_grad", c.requires_grad},
                        {"torch_ran", ranKernel(c)},
                        {"fused_choice", c.fused_choice},
                        {"aten_ops", c.aten_ops},
                        {"raised", c.raised},
                        {"memory_method", c.memory_method},
                        {"measured_bytes", c.forward.memory_measured > 0 ? nlohmann::json(c.forward.bytes_max) : nlohmann::json(nullptr)},
                        {"time_s", c.forward.meanTime()},
                        {"forward", statsJson(c.forward)},
                        {"backward", c.backward ? statsJson(*c.backward) : nlohmann::json(nullptr)}};
    nlohmann::json notes = c.notes;
    nlohmann::json suggestions = nlohmann::json::array();
    if (recorded) {
      const CallVerdict v = explainRecordedCall(c, *recorded, true);
      for (const auto& n : v.workload.notes) notes.push_back(n);
      if (!v.workload.problem.empty()) notes.push_back("not explained: " + v.workload.problem);
      j["predicted_kernel"] = v.predicted;
      j["predicted_bytes"] = nullable(v.predicted_bytes);
      j["agrees"] = !v.mismatch;
      j["first_rejection"] = v.first_rejection;
      j["spec"] = v.workload.spec ? toJson(*v.workload.spec) : nlohmann::json(nullptr);
      if (v.x)
        for (const auto& s : v.x->suggestions)
          suggestions.push_back({{"change", s.change}, {"kernel", toString(s.kernel)}, {"peak_bytes", s.peak_bytes},
                                 {"extra_bytes", s.extra_bytes}});
      if (target) {
        const CallVerdict t = explainRecordedCall(c, *target, false);
        j["target_kernel"] = t.predicted;
        j["target_bytes"] = nullable(t.predicted_bytes);
        const std::string change = kernelChange(v, t);
        j["change"] = change;
        j["target_first_rejection"] = t.first_rejection;
      }
    } else {
      j["predicted_kernel"] = "";
      j["predicted_bytes"] = nullptr;
      j["agrees"] = nullptr;
      notes.push_back("not explained: " + problem);
    }
    j["suggestions"] = suggestions;
    j["notes"] = notes;
    calls.push_back(std::move(j));
  }
  nlohmann::json out = {{"id", r.idText()},
                        {"name", r.name},
                        {"program", r.program},
                        {"cwd", r.cwd},
                        {"started_unix_ms", r.started_unix_ms},
                        {"ended_unix_ms", r.ended_unix_ms},
                        {"exit_status", r.exit_status ? nlohmann::json(*r.exit_status) : nlohmann::json(nullptr)},
                        {"exit_signal", r.exit_signal},
                        {"exit", r.exitText()},
                        {"interrupted", r.interrupted},
                        {"complete", r.complete},
                        {"stderr_tail", r.stderr_tail},
                        {"note", r.note},
                        {"torch", r.torch},
                        {"recorded_on", recorded ? nlohmann::json(recorded->describe()) : nlohmann::json(nullptr)},
                        {"calls_seen", r.calls_seen},
                        {"calls_dropped", r.calls_dropped},
                        {"overhead_s", r.overhead_s},
                        {"calls", calls}};
  if (target) out["target"] = target->describe();
  return out;
}

}  // namespace attnscope
