// frontier: the largest sequence, batch or head count whose predicted peak fits a memory budget,
// per value of another axis and per kernel (our backends' plans; each kernel torch could run and
// the one it picks, under the explainer's rules for a release and GPU). core/engine/frontier.h
// searches; this file makes the lines, the table and the notes on where a kernel change moves it.
#include <algorithm>
#include <iostream>
#include <set>

#include <nlohmann/json.hpp>

#include "app/cli_common.h"
#include "app/cli_table.h"
#include "app/commands.h"
#include "core/backend/backend_registry.h"
#include "core/base/format.h"
#include "core/engine/frontier.h"
#include "core/engine/recorded_sweep.h"
#include "core/engine/run_engine.h"
#include "core/result/run_result.h"
#include "core/torch_dispatch/installed_torch.h"
#include "core/torch_dispatch/sdpa_explain.h"
#include "kernels/builtin_session.h"
#include "kernels/builtin_backends.h"

namespace attnscope::cli {

using namespace torch_dispatch;

namespace {

std::vector<OptionDef> frontierOptions() {
  std::vector<OptionDef> opts = specOptions(false);
  std::vector<OptionDef> own = {
      {"budget", "BYTES|GPU", "the memory to fit: a size (16GiB, 1.5e10) or a GPU's name (V100, A100-40GB, H100: its "
                              "memory less a reserve for the CUDA context and the allocator, shown)"},
      {"reserve", "BYTES", "with --budget GPU: held back from its memory (default 512 MiB + 2 % of it)"},
      {"vary", "AXIS", "the axis searched: seq (default), batch or heads"},
      {"over", "AXIS", "the other axis, one line each value: heads (default; batch when --vary heads)"},
      {"backends", "LIST", "lines: our backends (cpu.reference, cpu.flash, cuda.math, cuda.chunked, cuda.flash), "
                           "torch.math, torch.efficient, torch.flash, torch.cudnn (a kernel forced) and torch (its pick); "
                           "default all"},
      {"torch", "V[,V...]", "torch releases for the torch lines, 2.0 .. 2.15 (default 2.15)"},
      {"gpu", "G[,G...]", "GPUs for the torch lines: smXY, a GPU name or cpu (default: the --budget GPU, else A100)"},
      {"verify", "", "run each line's frontier point and the next one on this machine's backends (the CPU here; the GPU "
                     "where there is one) with the budget enforced by the allocator: the first must run, the next be "
                     "refused; saved as a sweep. Pick a budget the machine runs in minutes (e.g. 64MiB)"},
      dbOption(),
      jsonOption()};
  opts.insert(opts.end(), own.begin(), own.end());
  return opts;
}

std::string commas(int64_t v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

// argv without the options that name the two axes (their values are lists here, or searched).
std::vector<std::string> withoutAxes(const std::vector<std::string>& argv, const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    bool drop = false;
    for (const auto& n : names) {
      if (a == "--" + n) {
        drop = true;
        ++i;  // and its value
      } else if (a.rfind("--" + n + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out.push_back(a);
  }
  return out;
}

std::string axisOption(FrontierAxis a) { return a == FrontierAxis::seq ? "seq" : std::string(toString(a)); }

struct TorchLine {
  TorchTarget target;
  std::optional<SdpaKernel> kernel;  // nullopt: torch's own pick
  std::string name;
};

}  // namespace

const CommandDef kFrontierDef{
    "frontier",
    "frontier [SPEC] --budget BYTES|GPU [--vary seq|batch|heads] [--heads LIST] [--backends LIST] [--torch V[,V...]] "
    "[--gpu G[,G...]] [--pass forward|train] [--json]",
    "How far a workload can go in a memory budget: the longest sequence (or largest batch, or most heads) whose "
    "predicted peak fits, per head count and per kernel, ours and torch's. Instant: no GPU, no torch needed.",
    frontierOptions(), 0,
    "The other axis takes a list (default --heads 1,2,4,8,16,32,64). Exact integer search over each kernel's predicted\n"
    "peak (inputs included): seq up to 16,777,216, batch up to 1,048,576, heads up to 16,384; '>=' marks a line the\n"
    "budget never stops there. The 'next' figure is the peak one step past the frontier and the buffer that decides it.\n"
    "Torch's lines follow `attnscope explain`'s rules per release and GPU; 'torch' is the kernel torch would pick.\n"
    "--verify runs the frontier points of our backends that run here, each with the allocator limited to the budget\n"
    "(the first must run, the next be refused) and saves them as a sweep. Exit status: 0; 1 a verified prediction\n"
    "did not hold; 2 bad input; 130 interrupted (the checks made are saved)."};

int cmdFrontier(const std::vector<std::string>& argv) {
  Args args(kFrontierDef, argv);
  FrontierQuery q;
  if (auto v = args.value("vary")) {
    auto a = parseFrontierAxis(*v);
    if (!a) throw UsageError("--vary: unknown axis '" + printable(*v) + "' (allowed: " + std::string(kFrontierAxisChoices) + ")");
    q.vary = *a;
  }
  q.other = q.vary == FrontierAxis::heads ? FrontierAxis::batch : FrontierAxis::heads;
  if (auto v = args.value("over")) {
    auto a = parseFrontierAxis(*v);
    if (!a) throw UsageError("--over: unknown axis '" + printable(*v) + "' (allowed: " + std::string(kFrontierAxisChoices) + ")");
    q.other = *a;
  }
  if (q.other == q.vary)
    throw UsageError("--over " + std::string(toString(q.other)) + ": the other axis must differ from --vary " +
                     std::string(toString(q.vary)));
  q.others = q.other == FrontierAxis::heads ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64}
                                            : std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128};
  if (auto v = args.value(axisOption(q.other))) {
    q.others.clear();
    for (const auto& item : splitList(axisOption(q.other), *v)) {
      size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != item.size() || n < 1 || n > frontierCap(q.other))
        throw UsageError("--" + axisOption(q.other) + ": '" + printable(item) + "' is not a whole number from 1 to " +
                         std::to_string(frontierCap(q.other)));
      q.others.push_back(n);
    }
  }
  if (args.value(axisOption(q.vary)))
    throw UsageError("--" + axisOption(q.vary) + ": it is the axis searched (--vary " + std::string(toString(q.vary)) +
                     "); give the other axis's list with --" + axisOption(q.other));
  {
    Args spec_args(kFrontierDef, withoutAxes(argv, {axisOption(q.vary), axisOption(q.other)}));
    q.spec = specFromArgs(spec_args);
  }

  // The budget.
  const auto budget_arg = args.value("budget");
  if (!budget_arg) throw UsageError("--budget is required: a size (16GiB) or a GPU's name (allowed GPUs: " + knownGpuMemories() + ")");
  std::optional<GpuBudget> gpu_budget;
  std::optional<int64_t> reserve;
  if (auto r = args.value("reserve")) reserve = parseBytes("reserve", *r);
  const bool looks_numeric = !budget_arg->empty() && (std::isdigit(static_cast<unsigned char>((*budget_arg)[0])) != 0);
  if (looks_numeric) {
    if (reserve) throw UsageError("--reserve applies to --budget GPU only (a size is the budget itself)");
    q.budget = parseBytes("budget", *budget_arg);
    if (q.budget <= 0) throw UsageError("--budget must be more than 0 bytes");
  } else {
    gpu_budget = gpuBudget(*budget_arg, reserve);
    if (!gpu_budget) {
      if (reserve) throw UsageError("--reserve " + printable(*args.value("reserve")) + " leaves nothing of " + printable(*budget_arg));
      throw UsageError("--budget: '" + printable(*budget_arg) + "' is neither a size (16GiB, 1.5e10) nor a GPU whose memory is "
                       "known (allowed: " + knownGpuMemories() + "; a size word picks a variant, e.g. A100-40GB)");
    }
    q.budget = gpu_budget->budget();
  }

  // The lines.
  std::vector<std::string> wanted;
  if (auto b = args.value("backends")) wanted = splitList("backends", *b);
  BackendRegistry registry;
  registerBuiltinBackends(registry);
  std::vector<FrontierLine> lines;
  const std::vector<std::string> ours(std::begin(kFrontierBackends), std::end(kFrontierBackends));
  const std::vector<std::string> torch_names = {"torch.math", "torch.efficient", "torch.flash", "torch.cudnn", "torch"};
  for (const auto& w : wanted)
    if (std::find(ours.begin(), ours.end(), w) == ours.end() && std::find(torch_names.begin(), torch_names.end(), w) == torch_names.end())
      throw UsageError("--backends: unknown line '" + printable(w) + "' (allowed: cpu.reference, cpu.flash, cuda.math, "
                       "cuda.chunked, cuda.flash, torch.math, torch.efficient, torch.flash, torch.cudnn, torch)");
  auto want = [&](const std::string& n) { return wanted.empty() || std::find(wanted.begin(), wanted.end(), n) != wanted.end(); };
  for (const auto& id : ours) {
    if (!want(id)) continue;
    if (Backend* b = registry.find(id)) lines.push_back(backendFrontierLine(*b));  // absent: not built (no CUDA)
  }
  std::vector<TorchVersion> versions;
  for (const auto& v : splitList("torch", args.value("torch").value_or(kNewestTorch.text()))) {
    auto t = parseTorchVersion(v);
    if (!t) throw UsageError("--torch: unknown version '" + printable(v) + "' (allowed: " + std::string(kTorchVersionChoices) + ")");
    versions.push_back(*t);
  }
  const std::string gpu_default = gpu_budget ? gpu_budget->gpu : "A100";
  std::vector<std::string> gpus = splitList("gpu", args.value("gpu").value_or(gpu_default));
  for (const auto& g : gpus)
    if (!targetForGpu(kNewestTorch, g))
      throw UsageError("--gpu: unknown GPU '" + printable(g) + "' (allowed: " + gpuChoices() + ", or cpu)");
  std::vector<TorchLine> torch_lines;
  for (const auto& v : versions)
    for (const auto& g : gpus) {
      TorchTarget t = *targetForGpu(v, g);
      t.requires_grad = q.spec.pass == Pass::train;
      for (const auto& k : torchFrontierKernels(t.device))
        if (want(k ? "torch." + std::string(toString(*k)) : "torch")) torch_lines.push_back({t, k, torchFrontierName(t, k)});
    }
  for (const auto& t : torch_lines) lines.push_back(torchFrontierLine(t.name, t.target, t.kernel));
  if (lines.empty()) throw UsageError("--backends: none of the lines asked for is built here");

  const std::vector<FrontierRow> rows = computeFrontier(q, lines);

  // Where a kernel change moves the frontier: for torch's pick at each point, the explainer's
  // cheapest suggestion at the frontier point, and the frontier under it.
  struct Change {
    std::string line;
    int64_t other;
    std::string text;
    nlohmann::json json;
  };
  std::vector<Change> changes;
  const size_t first_torch = lines.size() - torch_lines.size();
  for (size_t i = first_torch; i < rows.size(); ++i) {
    const TorchLine& t = torch_lines[i - first_torch];
    if (t.kernel) continue;  // torch's own pick only
    std::string previous;
    for (const auto& pt : rows[i].points) {
      if (pt.max == 0 || pt.kernel_at_max.empty()) continue;
      const bool changed = !previous.empty() && previous != pt.kernel_at_max;
      previous = pt.kernel_at_max;
      const WorkloadSpec at = withAxis(withAxis(q.spec, q.other, pt.other), q.vary, pt.max);
      const SdpaExplanation x = explainSdpa(at, t.target);
      std::string text = std::string(toString(q.other)) + " " + std::to_string(pt.other) + ": " + pt.kernel_at_max + " up to " +
                         std::string(toString(q.vary)) + " " + commas(pt.max) + (changed ? " (the kernel changes here)" : "");
      nlohmann::json j = {{"line", t.name}, {toString(q.other), pt.other}, {"kernel", pt.kernel_at_max}, {"max", pt.max},
                          {"kernel_changes_here", changed}};
      // The suggestion that takes this row furthest, among those that keep both axes (one that
      // changes the head count answers another row) and move it to another kernel.
      std::optional<FrontierPoint> best;
      std::string best_change;
      for (const auto& s : x.suggestions) {
        if (axisValue(s.spec, q.other) != pt.other || axisValue(s.spec, q.vary) != pt.max) continue;
        FrontierQuery aq = q;
        aq.spec = s.spec;
        const FrontierPoint ap = frontierPoint(aq, torchFrontierLine(t.name, s.target, std::nullopt), pt.other);
        if (ap.max == 0 || ap.kernel_at_max == pt.kernel_at_max) continue;
        if (!best || ap.max > best->max) {
          best = ap;
          best_change = s.change;
        }
      }
      const bool moved = best && std::max(best->max, best->max_aligned) > pt.max;
      if (moved) {
        text += "; with " + best_change + ": " + best->kernel_at_max + " up to " + std::string(toString(q.vary)) + " " +
                (best->unbounded ? ">= " : "") + commas(best->max) +
                (best->max_aligned > 0 ? " (x16: " + commas(best->max_aligned) + ")" : "");
        j["with"] = {{"change", best_change}, {"kernel", best->kernel_at_max}, {"max", best->max},
                     {"max_aligned", best->max_aligned}, {"unbounded", best->unbounded}};
      }
      if (moved || changed) changes.push_back({t.name, pt.other, text, j});
    }
  }

  const std::string budget_text = gpu_budget ? gpu_budget->describe() : formatBytes(q.budget);
  // --verify: our backends that run here, at each frontier point and one past it, under the budget;
  // and torch's CPU lines when the installed torch is the release they predict for.
  struct Check {
    std::string line, backend;
    int64_t other = 0, value = 0;
    bool at_frontier = true;  // else one past it
    int64_t predicted = -1;
    RunResult run;
    bool held = false;
    bool measured_only = false;  // torch: its memory is in its own process; measured against the budget
  };
  std::vector<Check> checks;
  std::vector<std::string> not_verified;
  auto verifyFailed = [](const std::vector<Check>& cs) {
    return std::any_of(cs.begin(), cs.end(), [](const Check& c) { return !c.held; });
  };
  if (args.flag("verify")) {
    CliSession& cs = session();
    struct Here {
      size_t line;
      Backend* backend;
      bool measured_only;
    };
    std::vector<Here> here;
    for (size_t i = 0; i < lines.size(); ++i)
      if (Backend* b = cs.registry.find(lines[i].name); b && b->availability().available &&
                                                      std::find(ours.begin(), ours.end(), b->id()) != ours.end())
        here.push_back({i, b, false});
    const size_t first_torch_line = lines.size() - torch_lines.size();
    std::optional<InstalledTorch> installed;
    for (size_t i = first_torch_line; i < lines.size(); ++i) {
      const TorchLine& t = torch_lines[i - first_torch_line];
      if (t.target.device != TorchDevice::cpu) {
        not_verified.push_back(t.name + ": a CUDA target (verified on the CPU only: torch's CPU lines)");
        continue;
      }
      if (!installed) installed = builtinInstalledTorch();
      const auto& v = installed->version;
      if (!installed->problem.empty() || !v || v->major != t.target.version.major || v->minor != t.target.version.minor) {
        not_verified.push_back(t.name + ": the installed torch is " +
                               (installed->problem.empty() ? installed->version_text : installed->problem));
        continue;
      }
      const std::string id = t.kernel ? "torch.cpu." + std::string(toString(*t.kernel)) : "torch.cpu.auto";
      if (Backend* b = cs.registry.find(id); b && b->availability().available) here.push_back({i, b, true});
      else not_verified.push_back(t.name + ": " + id + " is not available");
    }
    if (here.empty())
      throw UsageError("--verify: none of the lines runs on this machine (it runs our backends that are available here: "
                       "cpu.reference, cpu.flash, and the cuda.* ones on a GPU; and torch's CPU lines with --gpu cpu "
                       "and --torch the installed release)");
    for (const auto& h : here)
      for (const auto& pt : rows[h.line].points) {
        if (pt.max == 0 || pt.unbounded) continue;
        checks.push_back({lines[h.line].name, h.backend->id(), pt.other, pt.max, true, pt.peak_at_max, {}, false, h.measured_only});
        checks.push_back({lines[h.line].name, h.backend->id(), pt.other, pt.next, false, pt.next_peak, {}, false, h.measured_only});
      }
    auto store = openStore(databasePath(args));
    SweepSpec sw;
    sw.name = "frontier --verify " + budget_text;
    sw.base = q.spec;
    for (const auto& h : here) sw.backends.push_back(h.backend->id());
    sw.reps = 1;
    sw.warmup = 0;
    RecordedSweep recorded(*store, sw);
    InterruptGuard guard;
    bool cancelled = false;
    for (size_t k = 0; k < checks.size() && !cancelled; ++k) {
      Check& c = checks[k];
      Backend& b = *cs.registry.find(c.backend);
      const WorkloadSpec spec = withAxis(withAxis(q.spec, q.other, c.other), q.vary, c.value);
      if (!args.flag("json"))
        std::cerr << "verify " << (k + 1) << "/" << checks.size() << ": " << c.line << " " << summary(spec) << " ("
                  << (c.at_frontier ? "at the frontier" : "one past it") << ")\n";
      RunOptions opt;
      opt.warmup = 0;
      opt.reps = 1;
      opt.allocator_limit = c.measured_only ? -1 : q.budget;
      opt.cancel = &interruptFlag();
      opt.capture = cs.capture;
      c.run = runPoint(b, spec, opt);
      cancelled = c.run.status == RunStatus::cancelled;
      recorded.save(c.run);
      const int64_t measured = c.run.memory.measured_peak;
      if (c.measured_only)  // torch's peak as its profiler saw it, held against the budget
        c.held = c.run.status == RunStatus::ok && measured >= 0 && (c.at_frontier ? measured <= q.budget : measured > q.budget);
      else
        c.held = c.at_frontier ? c.run.status == RunStatus::ok : c.run.status == RunStatus::oom;
    }
    recorded.finish(cancelled);
    if (cancelled) {
      std::cerr << "cancelled; the checks made so far are saved\n";
      return 130;
    }
  }

  const std::string what = std::string(q.vary == FrontierAxis::seq ? "longest seq" : q.vary == FrontierAxis::batch ? "largest batch" : "most heads");
  if (args.flag("json")) {
    nlohmann::json j = {{"vary", toString(q.vary)}, {"over", toString(q.other)}, {"budget", q.budget},
                        {"budget_text", budget_text}, {"spec", toJson(q.spec)}, {"lines", nlohmann::json::array()},
                        {"changes", nlohmann::json::array()}};
    if (gpu_budget) j["gpu"] = {{"name", gpu_budget->gpu}, {"capacity", gpu_budget->capacity}, {"reserve", gpu_budget->reserve}};
    for (const auto& r : rows) {
      nlohmann::json l = {{"name", r.line}, {"points", nlohmann::json::array()}};
      for (const auto& p : r.points)
        l["points"].push_back({{toString(q.other), p.other}, {"max", p.max}, {"max_aligned", p.max_aligned}, {"unbounded", p.unbounded},
                               {"peak_at_max", p.peak_at_max}, {"kernel_at_max", p.kernel_at_max}, {"next", p.next}, {"next_peak", p.next_peak},
                               {"deciding", p.deciding}, {"why", p.why}});
      j["lines"].push_back(l);
    }
    for (const auto& c : changes) j["changes"].push_back(c.json);
    if (args.flag("verify")) {
      j["verify"] = nlohmann::json::array();
      for (const auto& c : checks)
        j["verify"].push_back({{"line", c.line}, {toString(q.other), c.other}, {toString(q.vary), c.value},
                               {"at_frontier", c.at_frontier}, {"predicted_peak", c.predicted},
                               {"measured_peak", c.run.memory.measured_peak}, {"status", toString(c.run.status)},
                               {"run", "R" + std::to_string(c.run.id)}, {"held", c.held}, {"backend", c.backend},
                               {"enforced", !c.measured_only}});
      j["not_verified"] = not_verified;
    }
    std::cout << jsonOutput(j) << "\n";
    return verifyFailed(checks) ? 1 : 0;
  }
  std::cout << what << " whose predicted peak fits " << budget_text << ", per " << toString(q.other) << "\n"
            << summary(withAxis(withAxis(q.spec, q.other, q.others.front()), q.vary, 1)) << " with " << toString(q.other)
            << " and " << toString(q.vary) << " varied\n\n";
  std::vector<std::string> header = {std::string(toString(q.other)) + " ->"};
  for (int64_t o : q.others) header.push_back(std::to_string(o));
  Table t(header);
  // Why a cell is empty, once per line and reason, with the values it holds for.
  std::vector<std::pair<std::string, std::vector<int64_t>>> reasons;
  bool aligned_seen = false;
  for (const auto& r : rows) {
    std::vector<std::string> cells = {r.line};
    for (const auto& p : r.points) {
      if (p.max == 0) {
        cells.push_back("-");
        const std::string key = r.line + ": " + p.why;
        auto it = std::find_if(reasons.begin(), reasons.end(), [&](const auto& e) { return e.first == key; });
        if (it == reasons.end()) reasons.push_back({key, {p.other}});
        else it->second.push_back(p.other);
        continue;
      }
      std::string c = (p.unbounded ? ">=" : "") + commas(p.max);
      if (r.line.size() > 8 && r.line.rfind("(picks)") == r.line.size() - 7) c += " " + p.kernel_at_max;
      if (p.max_aligned > 0) {
        c += " (x16: " + commas(p.max_aligned) + ")";
        aligned_seen = true;
      }
      cells.push_back(c);
    }
    t.add(cells);
  }
  std::cout << t.render();
  if (aligned_seen)
    std::cout << "\n(x16: N): every seq up to the first figure fits; a seq that is a multiple of 16 fits up to N (an "
                 "unaligned one pads its mask to 16 columns)\n";
  if (!reasons.empty()) {
    std::cout << "\n-: nothing fits, or the kernel cannot run:\n";
    for (const auto& [why, at] : reasons) {
      std::string values;
      for (int64_t v : at) values += (values.empty() ? "" : ",") + std::to_string(v);
      const size_t colon = why.find(": ");
      std::cout << "  " << why.substr(0, colon) << " at " << toString(q.other) << " " << values << ":" << why.substr(colon + 1) << "\n";
    }
  }
  if (!changes.empty()) {
    std::cout << "\nwhere a kernel change moves the frontier:\n";
    for (const auto& c : changes) std::cout << "  " << c.line << ", " << c.text << "\n";
  }
  if (args.flag("verify")) {
    std::cout << "\nverified on this machine, the allocator limited to " << formatBytes(q.budget) << ":\n";
    Table v({"line", std::string(toString(q.other)), std::string(toString(q.vary)), "point", "predicted", "measured", "status",
             "run", "prediction"});
    for (const auto& c : checks)
      v.add({c.line, std::to_string(c.other), commas(c.value), c.at_frontier ? "frontier" : "next",
             c.predicted < 0 ? "-" : c.at_frontier ? formatBytes(c.predicted) : formatBytes(c.predicted) + " (+" + commas(c.predicted - q.budget) + " B)",
             c.run.memory.measured_peak >= 0 ? formatBytes(c.run.memory.measured_peak) : "-",
             std::string(toString(c.run.status)), "R" + std::to_string(c.run.id),
             c.held ? (c.measured_only ? "held (measured)" : "held")
             : c.at_frontier ? (c.run.status == RunStatus::ok ? "FAILED: measured over the budget" : "FAILED: did not run (" + c.run.message + ")")
                             : "FAILED: ran within the budget"});
    std::cout << v.render();
    if (std::any_of(checks.begin(), checks.end(), [](const Check& c) { return c.measured_only; }))
      std::cout << "held (measured): torch's memory is its own allocator's, in its worker: nothing limits it, so its "
                   "measured peak is held against the budget\n";
    for (const auto& n : not_verified) std::cout << "not verified: " << n << "\n";
  }
  return verifyFailed(checks) ? 1 : 0;
}

}  // namespace attnscope::cli
