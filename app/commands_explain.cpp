// explain: which SDPA kernel PyTorch would pick for SPEC on a torch version and GPU, why, and what
// it costs (core/torch_dispatch). Needs neither torch nor a GPU unless asked to look them up.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/cli_common.h"
#include "app/cli_table.h"
#include "app/commands.h"
#include "core/base/format.h"
#include "core/base/utf8_text.h"
#include "core/torch_dispatch/installed_torch.h"
#include "core/torch_dispatch/sdpa_explain.h"
#include "kernels/builtin_session.h"

namespace attnscope::cli {

using namespace torch_dispatch;

namespace {

std::vector<OptionDef> explainOptions() {
  std::vector<OptionDef> opts = specOptions(false);
  std::vector<OptionDef> own = {
      {"torch", "VERSION[,V...]", "torch release 2.0 .. 2.15 (e.g. 2.5.1), or 'installed' to ask the Python (default 2.15); several: one table across them"},
      {"gpu", "GPU[,G...]", "smXY (sm50 .. sm121), a GPU name (V100, A100, H100, RTX 4090, ...), 'detected', or 'cpu' (default A100; detected with --torch installed); several: one table across them"},
      {"cudnn", "VERSION", "runtime cuDNN version X.Y.Z, e.g. 9.10.2, or torch's integer form 91002 (default: the PyPI wheel's)"},
      {"cuda", "MAJOR", "CUDA major version torch was built with (default: the PyPI wheel's)"},
      {"threads", "N", "torch.get_num_threads() for CPU buffers (default: the installed torch's, else this machine's cores)"},
      {"kernel", "K", "explain a forced kernel (sdpa_kernel): flash, efficient, cudnn or math"},
      {"reduced-math", "", "allow_fp16_bf16_reduction_math_sdp(True): math in fp16/bf16 without fp32 copies (2.5+)"},
      {"training", "", "inputs require grad (logsumexp kept; training-only rules apply)"},
      {"deterministic", "", "torch.use_deterministic_algorithms(True)"},
      {"python", "PATH", "the Python asked by 'installed' and 'detected', the one the torch.* backends use (default: $ATTNSCOPE_PYTHON, else python3 on PATH)"},
      jsonOption()};
  opts.insert(opts.end(), own.begin(), own.end());
  return opts;
}

bool envTrue(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "1" || s == "true" || s == "yes" || s == "on";
}
bool envFalse(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return false;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s == "0" || s == "false" || s == "no" || s == "off";
}

struct ResolvedTarget {
  TorchTarget target;
  std::vector<std::string> notes;  // how the target was chosen
};

// torch_arg and gpu_arg: one entry of --torch and --gpu (a list gives one target per pair).
ResolvedTarget resolveTarget(const Args& args, const std::string& torch_arg, std::string gpu_arg) {
  ResolvedTarget r;
  const bool installed = torch_arg == "installed";
  // The torch backends' own answer (their Python, their probe, their timeout): explain and
  // `attnscope backends` cannot ask different Pythons.
  std::optional<InstalledTorch> probe;
  auto ask = [&](const std::string& option) -> const InstalledTorch& {
    if (!probe) probe = builtinInstalledTorch();
    if (!probe->problem.empty()) throw std::runtime_error(option + ": " + probe->problem);
    return *probe;
  };
  auto where = [&] { return " (" + probe->python + ")"; };

  TorchVersion version;
  if (installed) {
    const InstalledTorch& h = ask("--torch installed");
    if (!h.version) throw std::runtime_error("--torch installed" + where() + ": " + h.version_problem);
    version = *h.version;
    r.notes.push_back("torch " + h.version_text + " from " + h.python);
  } else {
    auto v = parseTorchVersion(torch_arg);
    if (!v) throw UsageError("--torch: unknown version '" + printable(torch_arg) + "' (allowed: " + std::string(kTorchVersionChoices) + ")");
    version = *v;
  }

  TorchDevice device = TorchDevice::cuda;
  ComputeCapability cc{8, 0};
  std::string gpu_name;
  if (gpu_arg == "cpu") {
    device = TorchDevice::cpu;
  } else if (gpu_arg == "detected") {
    const InstalledTorch& h = ask("--gpu detected");
    if (!h.gpu) throw std::runtime_error("--gpu detected" + where() + ": " + h.gpu_problem + "; give --gpu smXY, a GPU name, or cpu");
    cc = h.gpu->capability;
    gpu_name = h.gpu->name;
  } else {
    auto g = parseGpu(gpu_arg);
    if (!g) throw UsageError("--gpu: unknown GPU '" + printable(gpu_arg) + "' (allowed: " + gpuChoices() + ")");
    cc = g->capability;
    gpu_name = g->name;
    if (!args.value("gpu")) r.notes.push_back("GPU A100 (sm80) by default; choose with --gpu");
  }

  r.target = defaultTorchTarget(version, device, cc);
  r.target.gpu_name = gpu_name;
  if (installed) {  // the CUDA and cuDNN this torch was built with and loads, where it says
    if (probe->cudnn) r.target.cudnn = *probe->cudnn;
    if (probe->cuda_major > 0) r.target.cuda_major = probe->cuda_major;
  }
  if (auto v = args.value("cudnn")) {
    auto c = parseCudnnVersion(*v);
    if (!c) throw UsageError("--cudnn: unknown version '" + printable(*v) + "' (allowed: " + std::string(kCudnnVersionChoices) + ")");
    r.target.cudnn = *c;
  }
  if (args.value("cuda")) r.target.cuda_major = args.intValue("cuda", 12, 11);
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  r.target.cpu_threads = args.value("threads") ? args.intValue("threads", 1, 1) : probe && probe->cpu_threads > 0 ? probe->cpu_threads : hw;
  if (device == TorchDevice::cpu) applyLocalCpu(r.target);  // the CPU flash pack path: this machine's AMX
  r.target.env_cudnn_sdpa_enabled = envTrue("TORCH_CUDNN_SDPA_ENABLED");
  r.target.env_cudnn_sdpa_preferred = !envFalse("TORCH_CUDNN_SDPA_PREFERRED");
  r.target.env_cudnn_sdpa_deprioritized = envTrue("TORCH_CUDNN_SDPA_DEPRIORITIZED");
  r.target.allow_fp16_bf16_reduction_math = args.flag("reduced-math");
  r.target.requires_grad = args.flag("training");
  r.target.deterministic = args.flag("deterministic");
  return r;
}

std::string bytesText(int64_t b) { return formatBytes(b) + " (" + std::to_string(b) + " B)"; }

void printMemory(const SdpaMemory& m) {
  const auto& plan = m.plan;
  const int peak = plan.peakStep();
  std::cout << "predicted peak: " << bytesText(m.peakBytes()) << " = inputs " << formatBytes(m.input_bytes) << " + "
            << formatBytes(m.extraBytes()) << " allocated by the call, at step \"" << plan.steps[peak] << "\"\n\n";
  Table t({"bytes", "at peak", "steps", "buffer"});
  for (const auto& b : plan.buffers) {
    const bool live = b.first_step <= peak && peak <= b.last_step;
    t.add({std::to_string(b.bytes), live ? "yes" : "-",
           std::to_string(b.first_step) + (b.last_step > b.first_step ? "-" + std::to_string(b.last_step) : ""), b.name});
  }
  std::cout << t.render() << "steps: ";
  for (int i = 0; i < plan.stepCount(); ++i) std::cout << (i ? ", " : "") << i << " " << plan.steps[i];
  std::cout << "\n";
}

void printVerdict(size_t index, const KernelVerdict& v) {
  std::string head = "  " + std::to_string(index) + ". " + std::string(toString(v.kernel));
  head += std::string(std::max<size_t>(1, 16 - head.size()), ' ');
  if (v.chosen) head += "WOULD RUN (chosen)";
  else if (v.usable) head += "would run (not reached)";
  else head += "rejected by " + v.rule_id;
  if (!v.via.empty()) head += "  [via " + v.via + "]";
  std::cout << head << "\n";
  if (!v.usable)
    std::cout << "       rule:   " << v.rule << "\n       torch:  \"" << v.torch_message << "\"\n       source: " << v.source << "\n";
}

void printExplanation(const SdpaExplanation& x, const std::vector<std::string>& target_notes, bool forced) {
  std::cout << "workload: " << summary(x.spec) << "\n"
            << "target:   " << x.target.describe() << "\n"
            << "call:     " << x.call.pythonCall() << "\n          " << x.call.describe() << "\n";
  if (!forced) {
    std::cout << "order:    ";
    for (size_t i = 0; i < x.order.kernels.size(); ++i) std::cout << (i ? ", " : "") << toString(x.order.kernels[i]);
    std::cout << "  (" << x.order.reason << "; " << x.order.source << ")\n";
  }
  std::cout << "\n";
  for (size_t i = 0; i < x.verdicts.size(); ++i) printVerdict(i + 1, x.verdicts[i]);
  std::cout << "\n";
  if (!x.chosen) {
    std::cout << "torch would raise: " << x.error << "\n";
  } else {
    std::cout << "torch would pick: " << toString(*x.chosen) << "   (torch._fused_sdp_choice = " << fusedSdpChoiceIndex(*x.chosen) << ")\n";
    if (!x.error.empty()) std::cout << "but it would fail: " << x.error << "\n";
    printMemory(x.memory);
  }
  if (!x.suggestions.empty()) {
    std::cout << "\ncheaper with:\n";
    Table t({"peak", "kernel", "change"});
    for (const auto& s : x.suggestions) t.add({formatBytes(s.peak_bytes), std::string(toString(s.kernel)), s.change});
    std::cout << t.render();
  }
  std::vector<std::string> notes = target_notes;
  notes.insert(notes.end(), x.notes.begin(), x.notes.end());
  if (!notes.empty()) {
    std::cout << "\nnotes:\n";
    for (const auto& n : notes) std::cout << "  - " << n << "\n";
  }
}

// --torch V1,V2,... and/or --gpu G1,G2,...: one row per (release, GPU), each the single-target
// explanation's kernel, deciding rule and peak; a row whose kernel or peak differs from the row
// before it is marked.
int explainAcross(const Args& args, const WorkloadSpec& spec, const std::vector<std::string>& torches,
                  const std::vector<std::string>& gpus) {
  if (args.value("kernel")) throw UsageError("--kernel explains one target: give one --torch and one --gpu with it");
  std::vector<SdpaExplanation> xs;
  std::vector<std::string> notes;
  // Grouped by GPU, releases in the order given: a change is marked against the release before on
  // the same GPU ("what does upgrading from 2.1 to 2.5 do to this call").
  std::vector<size_t> group;
  for (const auto& g : gpus)
    for (const auto& v : torches) {
      group.push_back(static_cast<size_t>(&g - gpus.data()));
      const ResolvedTarget r = resolveTarget(args, v, g);
      for (const auto& n : r.notes)
        if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
      xs.push_back(explainSdpa(spec, r.target));
    }
  // The rules that kept torch off the kernels before its pick, in its order.
  auto deciding = [](const SdpaExplanation& x) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& v : x.verdicts) {
      if (v.chosen) break;
      if (!v.usable) out.push_back({v.rule_id, v.rule});
    }
    return out;
  };
  auto changedAt = [&](size_t i) {
    return i > 0 && group[i] == group[i - 1] &&
           (xs[i].chosen != xs[i - 1].chosen || xs[i].peakBytes() != xs[i - 1].peakBytes());
  };
  if (args.flag("json")) {
    nlohmann::json j = {{"spec", toJson(spec)}, {"targets", nlohmann::json::array()}, {"notes", notes}};
    for (size_t i = 0; i < xs.size(); ++i) {
      nlohmann::json e = torch_dispatch::toJson(xs[i]);
      e["changed"] = changedAt(i);
      j["targets"].push_back(e);
    }
    std::cout << jsonOutput(j) << "\n";
    return 0;
  }
  std::cout << "workload: " << summary(spec) << "\n\n";
  Table t({"", "torch", "target", "kernel", "peak", "kernels before it refused by"});
  std::vector<std::string> rules;
  for (size_t i = 0; i < xs.size(); ++i) {
    const auto& x = xs[i];
    const bool changed = changedAt(i);
    std::string id;
    for (const auto& [rule_id, rule] : deciding(x)) {
      id += (id.empty() ? "" : ", ") + rule_id;
      if (std::find(rules.begin(), rules.end(), rule_id + " = " + rule) == rules.end()) rules.push_back(rule_id + " = " + rule);
    }
    std::string where = x.target.device == TorchDevice::cpu ? "cpu" : x.target.capability.text();
    if (!x.target.gpu_name.empty()) where += " (" + x.target.gpu_name + ")";
    t.add({changed ? "*" : "", x.target.version.text(), where, x.chosen ? std::string(toString(*x.chosen)) : "raises",
           x.chosen ? formatBytes(x.peakBytes()) : "-", id.empty() ? "first in order" : id});
  }
  std::cout << t.render() << "\n* the kernel or the peak changes from the release above on the same GPU\n";
  if (!rules.empty()) {
    std::cout << "\nrules:\n";
    for (const auto& r : rules) std::cout << "  " << r << "\n";
  }
  if (!notes.empty()) {
    std::cout << "\nnotes:\n";
    for (const auto& n : notes) std::cout << "  - " << n << "\n";
  }
  std::cout << "\n`attnscope explain SPEC --torch V --gpu G` gives one row's buffers, rules and suggestions.\n";
  return 0;
}

}  // namespace

const CommandDef kExplainDef{
    "explain", "explain [SPEC] [--torch VERSION[,V...]|installed] [--gpu smXY|NAME|detected|cpu[,G...]] [--cudnn VERSION] [--json]",
    "Predict which SDPA kernel PyTorch would pick for SPEC, why, and its peak memory as named buffers. "
    "Needs neither a GPU nor torch.",
    explainOptions(), 0,
    "How the mask is passed: causal as is_causal=True (causal_lower_right(Lq, Lkv) when Lq != Lkv), dense/window/block\n"
    "as a bool tensor [1,1,L,S] (--mask-layout broadcast) or [B,H,L,S] (per_head); GQA as enable_gqa=True (2.5+).\n"
    "Environment read: TORCH_CUDNN_SDPA_ENABLED, TORCH_CUDNN_SDPA_PREFERRED, TORCH_CUDNN_SDPA_DEPRIORITIZED.\n"
    "Each rule names the torch source it was read from; what was measured against real torch releases, and where:\n"
    "docs/TORCH_RELEASES.md."};

int cmdExplain(const std::vector<std::string>& argv) {
  Args args(kExplainDef, argv);
  applyPythonOption(args);
  const WorkloadSpec spec = specFromArgs(args);
  // The explainer models torch's choice for one forward SDPA call; a layer or a backward is not it.
  if (spec.kind != WorkloadKind::attention)
    throw UsageError("--kind: explain covers one SDPA call, kind attention (got " + std::string(toString(spec.kind)) + ")");
  if (spec.pass != Pass::forward)
    throw UsageError("--pass: explain covers the forward SDPA call (got " + std::string(toString(spec.pass)) +
                     "); --training explains it with inputs that require grad");
  const std::string torch_list = args.value("torch").value_or(kNewestTorch.text());
  // One value is taken as given (" A100" stays refused); a comma makes a list of them.
  auto listOf = [](const std::string& option, const std::string& text) {
    return text.find(',') == std::string::npos ? std::vector<std::string>{text} : splitList(option, text);
  };
  const std::vector<std::string> torches = listOf("torch", torch_list);
  const std::string gpu_default = torches.size() == 1 && torches[0] == "installed" ? "detected" : "A100";
  const std::vector<std::string> gpus = listOf("gpu", args.value("gpu").value_or(gpu_default));
  if (torches.size() > 1 || gpus.size() > 1) return explainAcross(args, spec, torches, gpus);
  const ResolvedTarget r = resolveTarget(args, torches[0], gpus[0]);
  SdpaExplanation x;
  const bool forced = args.value("kernel").has_value();
  if (forced) {
    auto k = parseSdpaKernel(*args.value("kernel"));
    if (!k) throw UsageError("--kernel: unknown kernel '" + printable(*args.value("kernel")) + "' (allowed: flash, efficient, cudnn, math)");
    const ForcedSdpa f = explainForcedSdpa(spec, r.target, *k);
    x = explainSdpa(spec, r.target, ExplainOptions{false});
    x.verdicts = {f.verdict};
    x.chosen = f.verdict.usable ? std::optional<SdpaKernel>(f.verdict.kernel) : std::nullopt;
    x.memory = f.memory;
    x.notes = f.memory.notes;
    if (f.verdict.kernel != *k) x.notes.insert(x.notes.begin(), f.verdict.via);
    x.error = f.verdict.usable ? "" : "No available kernel. Aborting execution.";
  } else {
    x = explainSdpa(spec, r.target);
  }
  if (args.flag("json")) {
    nlohmann::json j = torch_dispatch::toJson(x);
    j["forced"] = forced;
    for (const auto& n : r.notes) j["notes"].insert(j["notes"].begin(), n);
    std::cout << jsonOutput(j) << "\n";
  } else {
    printExplanation(x, r.notes, forced);
  }
  return 0;
}

}  // namespace attnscope::cli
