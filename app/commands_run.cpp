// backends, run, sweep: the commands that execute workloads.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli_common.h"
#include "app/cli_results.h"
#include "app/commands.h"
#include "app/commands_record.h"
#include "core/result/environment.h"
#include "core/base/format.h"
#include "core/files/output_file.h"
#include "core/engine/recorded_sweep.h"
#include "core/inputs/run_files.h"
#include "core/engine/run_engine.h"
#include "core/spec/spec_fields.h"
#include "core/engine/shard.h"
#include "core/engine/sweep_runner.h"
#include "core/base/uuid.h"
#include "kernels/builtin_session.h"

namespace attnscope::cli {
namespace {

std::vector<OptionDef> withSpec(std::vector<OptionDef> opts, bool lists) {
  auto spec = specOptions(lists);
  opts.insert(opts.begin(), spec.begin(), spec.end());
  return opts;
}

std::atomic<bool>& g_cancel = interruptFlag();

Backend& findBackend(const std::string& option, const std::string& id) {
  Backend* b = session().registry.find(id);
  if (!b)
    throw UsageError("--" + option + ": unknown backend '" + id + "' (allowed: " + join(session().registry.ids(), ", ") + ")");
  return *b;
}

// The predicted peak of SPEC on b, or -1: shown where b runs it, and also where the only thing
// missing is the device (a GPU backend on a machine without one: its plan needs no device).
int64_t predictedPeak(Backend& b, const WorkloadSpec& spec, const Availability& av, const Support& sup) {
  const bool only_unavailable = !av.available && sup.reasons.size() == 1 && sup.reasons[0] == av.reason;
  if (!sup.ok() && !only_unavailable) return -1;
  return b.plan(spec).peakBytes();  // -1 when the plan is unknown
}

}  // namespace

const CommandDef kBackendsDef{
    "backends", "backends [SPEC] [--json]", "List the backends of this build and whether each can run SPEC, and why not.",
    withSpec({pythonOption(), jsonOption()}, false), 0,
    "SPEC defaults to B=1, 8 heads, seq 1024, head_dim 64, fp32, no mask. The torch.* backends run PyTorch's SDPA in "
    "your Python (--python)."};

int cmdBackends(const std::vector<std::string>& argv) {
  Args args(kBackendsDef, argv);
  applyPythonOption(args);
  WorkloadSpec spec = specFromArgs(args);
  CliSession& s = session();
  if (args.flag("json")) {
    nlohmann::json out = {{"spec", toJson(spec)}, {"notes", s.notes}, {"backends", nlohmann::json::array()}};
    for (Backend* b : s.registry.all()) {
      Availability av = b->availability();
      Support sup = b->support(spec);
      out["backends"].push_back({{"id", b->id()},
                                 {"device", b->device()},
                                 {"description", b->description()},
                                 {"available", av.available},
                                 {"unavailable_reason", av.reason},
                                 {"supported", sup.ok()},
                                 {"reasons", sup.reasons},
                                 {"note", sup.note},
                                 {"predicted_peak", predictedPeak(*b, spec, av, sup)}});
    }
    for (const auto& [key, note] : builtinBackendSettings().notes()) out[key] = note;
    std::cout << jsonOutput(out) << "\n";
    return 0;
  }
  s.printNotes();
  std::cout << "spec: " << summary(spec) << "\n\n";
  Table t({"backend", "device", "available", "runs spec", "predicted peak", "why not / description"});
  for (Backend* b : s.registry.all()) {
    Availability av = b->availability();
    Support sup = b->support(spec);
    const int64_t peak = predictedPeak(*b, spec, av, sup);
    t.add({b->id(), b->device(), av.available ? "yes" : "no", sup.ok() ? "yes" : "no",
           peak >= 0 ? formatBytes(peak) : sup.ok() ? "unknown" : "-",
           sup.ok() ? (sup.note.empty() ? b->description() : sup.note) : join(sup.reasons, "; ")});
  }
  std::cout << t.render();
  for (const auto& [key, note] : builtinBackendSettings().notes()) std::cout << "\n" << note << "\n";
  return 0;
}

const CommandDef kRunDef{
    "run", "run --backend ID [SPEC] [--reps N] [--warmup N] [--check MODE] [--dump DIR] [--inputs DIR] [--db FILE | --no-db] [--json]",
    "Run one workload on one backend: time, throughput, predicted and measured peak memory, accuracy against a "
    "float64 reference.",
    withSpec({{"backend", "ID", "backend id (see attnscope backends)"},
              {"reps", "N", "timed repetitions (default 5)"},
              {"warmup", "N", "warm-up runs (default 1)"},
              {"dump", "DIR", "write q.npy k.npy v.npy out.npy (and mask.npy; for --pass train g.npy dq.npy dk.npy dv.npy) in [B,H,L,D] layout; --kind layer: x.npy and the weights, y as out.npy, dx.npy and the weights' gradients"},
              {"inputs", "DIR", "read q.npy k.npy v.npy (and mask.npy; for --pass train g.npy) instead of generating inputs; --kind layer: x.npy w_qkv.npy b_qkv.npy w_o.npy b_o.npy"},
              checkOption(),
              {"no-check", "", "the same as --check off (kept for scripts that use it)"},
              {"name", "NAME", "name of the saved run's sweep (default: run <backend>)"},
              pythonOption(),
              dbOption(),
              {"no-db", "", "do not save the run"},
              jsonOption()},
             false),
    0,
    "bf16 arrays are dumped and read as float32 holding exact bf16 values. Exit status: 0 ok, 1 the run did not "
    "succeed (status wrong: failed its accuracy check; oom, error, unsupported, cancelled), 2 bad input."};

namespace {

// --dump is checked before anything runs: a folder we can create and write into, in which every
// file the run will write is either absent or a regular file (no link, FIFO or device).
void checkDumpFolder(const std::string& dir, const WorkloadSpec& spec, const std::string& dbPath) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw UsageError("--dump: '" + dir + "' exists and is not a folder (give a folder for q.npy k.npy v.npy out.npy)");
  fs::create_directories(dir, ec);
  if (ec) throw UsageError("--dump: cannot create folder '" + dir + "': " + ec.message());
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError("--dump: cannot write into folder '" + dir + "': " + std::strerror(errno));
  try {
    checkDumpEntries(dir, spec, dbPath);
  } catch (const OutputRefused& e) {
    throw UsageError(std::string("--dump: ") + e.what());
  }
}

}  // namespace

int cmdRun(const std::vector<std::string>& argv) {
  Args args(kRunDef, argv);
  applyPythonOption(args);
  auto backendId = args.value("backend");
  if (!backendId) throw UsageError("--backend is required (allowed: " + join(session().registry.ids(), ", ") + ")");
  WorkloadSpec spec = specFromArgs(args);
  RunOptions opt;
  opt.reps = args.intValue("reps", 5, 1, kMaxReps);
  opt.warmup = args.intValue("warmup", 1, 0, kMaxReps);
  opt.check = checkModeFromArgs(args);
  if (args.flag("no-db") && args.value("db")) throw UsageError("--db and --no-db are exclusive");
  const std::string name = sweepNameOption(args);
  Backend& backend = findBackend("backend", *backendId);
  const auto dumpDir = args.value("dump");
  if (dumpDir) checkDumpFolder(*dumpDir, spec, args.flag("no-db") ? std::string() : databasePath(args));
  std::unique_ptr<Store> store;
  if (!args.flag("no-db")) store = openStore(databasePath(args));
  CliSession& s = session();
  if (!args.flag("json")) s.printNotes();
  opt.capture = s.capture;
  InterruptGuard guard;
  builtinBackendSettings().setCancel(&g_cancel);  // Ctrl-C also stops a torch import in progress
  opt.cancel = &g_cancel;
  // The memory guard runs before any input is read or generated, counting the inputs.
  RunResult r = preflight(backend, spec, opt);
  HostInputs inputs;
  std::vector<float> output;
  AttentionGradients gradients;
  std::vector<LayerGradients> layerGradients;
  if (r.status == RunStatus::ok) {
    if (auto dir = args.value("inputs")) {
      try {
        inputs = loadInputs(*dir, spec);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--inputs: ") + e.what());
      }
      opt.inputs = &inputs;
    } else if (dumpDir) {
      opt.generated_inputs = &inputs;
    }
    if (dumpDir) {
      opt.output = &output;
      opt.gradients = &gradients;
      opt.layer_gradients = &layerGradients;
    }
    r = runPoint(backend, spec, opt);
  }
  if (store) {
    SweepSpec one;
    one.name = name.empty() ? "run " + backend.id() : name;
    one.base = spec;
    one.backends = {backend.id()};
    one.reps = opt.reps;
    one.warmup = opt.warmup;
    one.check = opt.check;
    RecordedSweep recorded(*store, one);
    recorded.save(r);
    recorded.finish(r.status == RunStatus::cancelled);
  }
  const std::string savedIn = store ? store->path() : std::string();
  store.reset();  // its descriptors are free for the dump (a low `ulimit -n`)
  // A wrong output is dumped too: the files are how one looks into it. A dump that fails is
  // reported after the run, which is saved all the same.
  const bool dumping = dumpDir && (r.status == RunStatus::ok || r.status == RunStatus::wrong);
  std::string dumpError;
  if (dumping) {
    try {
      dumpRun(*dumpDir, spec, inputs, output, &gradients, &layerGradients);
    } catch (const std::exception& e) {
      dumpError = e.what();
    }
  }
  if (args.flag("json")) {
    std::cout << jsonOutput(toJson(r)) << "\n";
  } else {
    printRunDetails(r, std::cout);
    if (dumping && dumpError.empty()) std::cout << "  dumped to        " << printable(*dumpDir) << "\n";
    if (!savedIn.empty()) std::cout << "  saved as         R" << r.id << " in " << printable(savedIn) << "\n";
  }
  // The message may quote a worker or a torch message: escaped like every printed text.
  if (r.status != RunStatus::ok)
    std::cerr << "error: " << r.backend << ": " << toString(r.status) << ": " << printable(r.message) << "\n";
  if (!dumpError.empty()) {
    std::cerr << "error: --dump: " << printable(dumpError)
              << (savedIn.empty() ? std::string() : "; the run is saved as R" + std::to_string(r.id)) << "\n";
    return 1;
  }
  return r.status == RunStatus::ok ? 0 : 1;
}

const CommandDef kSweepDef{
    "sweep", "sweep --backends A,B [--from REC:ROW] [--heads 8,16,32] [--seq 1024,4096] [SPEC lists] [--budget SIZE] [--check MODE] [--name N] [--shard K/N | --slurm [SLURM options]] [--db FILE] [--json]",
    "Run a grid of workloads (every SPEC option takes a comma-separated list) on several backends, saving every "
    "point as it finishes.",
    withSpec({{"backends", "A,B", "backend ids (default: every backend available on this machine)"},
              {"from", "REC:ROW", "start from a recorded call (attnscope record; REC<n>:ROW as 'show REC<n>' lists): its "
                                  "shapes, dtype, mask and scale, each SPEC option still overriding or sweeping"},
              {"name", "NAME", "sweep name (default: sweep <time>)"},
              {"budget", "SIZE", "skip points whose predicted peak exceeds SIZE (e.g. 8GiB); stored as skipped"},
              {"reps", "N", "timed repetitions per point (default 3)"},
              {"warmup", "N", "warm-up runs per point (default 1)"},
              {"quiet", "", "no per-point progress on stderr"},
              {"shard", "K/N", "run only shard K (0-based) of N: the points split by predicted cost (the longest first, "
                               "each to the least loaded shard), the same on every machine; merge the shards' databases "
                               "with attnscope merge"},
              {"points", "LIST", "run only these global point indexes (e.g. 0,3,5-9; as 'slurm resume' writes them)"},
              {"sweep-uuid", "UUID", "store the sweep under this UUID (the shards of one sweep share one)"},
              {"spec-file", "FILE", "the sweep as JSON (as --slurm writes it) instead of SPEC options and --backends"},
              {"slurm", "", "submit the sweep to Slurm as a job array instead of running it here (see 'Sweeps on a cluster')"},
              {"partition", "P[,P2]", "--slurm: the partition(s); several run the same grid on each, one sweep per partition"},
              {"gres", "SPEC", "--slurm: generic resources per task (e.g. gpu:1)"},
              {"tasks", "N", "--slurm: array tasks (default: one per 4 points, at most 64; capped by MaxArraySize)"},
              {"parallel", "M", "--slurm: at most M tasks at once (sbatch --array=0-N%M)"},
              {"time", "T", "--slurm: time limit per task (sbatch --time)"},
              {"account", "A", "--slurm: account to charge (sbatch --account)"},
              {"sbatch-arg", "X", "--slurm: one more sbatch argument, as given (repeatable)", true},
              {"out", "DIR", "--slurm: the shared folder for the script, the shards and the logs (default ./attnscope-slurm)"},
              {"dry-run", "", "--slurm: print the sbatch script and submit nothing"},
              {"wait", "", "--slurm: follow the job (squeue, sacct) and merge each shard as its task finishes"},
              checkOption(),
              pythonOption(),
              dbOption(),
              jsonOption()},
             true),
    0,
    "A failing point (oom, unsupported, error) is stored with its status and the sweep goes on. Ctrl-C cancels: "
    "every finished point stays saved. --width W sweeps heads at a fixed model width (head_dim = W / heads). Lists "
    "are comma-separated (spaces around values are ignored). Exit status: 0 every point ran as it could (ok, or "
    "oom, unsupported, skipped: what exploring a grid finds); 1 a point is wrong (failed its accuracy check) or "
    "error, or the sweep was cancelled or could not be saved; 2 bad input."};

SweepSpec sweepSpecFromArgs(const Args& args) {
  CliSession& s = session();
  SweepSpec sw;
  if (auto file = args.value("spec-file")) {
    for (const SpecField& f : specFields())
      if (args.value(std::string(f.cli))) throw UsageError("--spec-file and --" + std::string(f.cli) + " are exclusive");
    if (args.value("backends") || args.value("from")) throw UsageError("--spec-file and --backends/--from are exclusive");
    std::ifstream in(*file);
    if (!in) throw UsageError("--spec-file: cannot read '" + *file + "'");
    try {
      sw = sweepSpecFromJson(nlohmann::json::parse(in));
    } catch (const std::exception& e) {
      throw UsageError("--spec-file: '" + *file + "' is not a sweep: " + e.what());
    }
    for (const auto& id : sw.backends) findBackend("backends", id);
    std::vector<SpecError> errs;
    sw.expand(&errs);
    if (!errs.empty()) throw UsageError(describe(errs));
    return sw;
  }
  if (args.value("width") && args.value("head-dim")) throw UsageError("--width and --head-dim are exclusive");
  if (auto from = args.value("from")) sw.base = specOfRecordedCall(databasePath(args), *from);
  for (const SpecField& f : specFields()) {
    const std::string cli(f.cli), field(f.name);
    auto v = args.value(cli);
    if (!v) continue;
    auto values = splitList(cli, *v);
    if (values.size() > 1 && !f.sweepable) throw UsageError("--" + cli + " takes one value: " + field + " is not swept");
    if (values.size() == 1) {
      if (auto e = setField(sw.base, field, values[0])) throw UsageError(e->field + ": " + e->message);
    } else {
      sw.axes.push_back({field, values});
    }
  }
  if (auto b = args.value("backends")) {
    sw.backends = splitList("backends", *b);
    for (const auto& id : sw.backends) findBackend("backends", id);
  } else {
    for (Backend* b : s.registry.all())
      if (b->availability().available) sw.backends.push_back(b->id());
  }
  if (sw.backends.empty()) throw UsageError("--backends: no backend given");
  sw.reps = args.intValue("reps", 3, 1, kMaxReps);
  sw.warmup = args.intValue("warmup", 1, 0, kMaxReps);
  if (auto b = args.value("budget")) sw.memory_budget = parseBytes("budget", *b);
  sw.check = checkModeFromArgs(args);
  std::vector<SpecError> errs;
  sw.expand(&errs);
  if (!errs.empty()) throw UsageError(describe(errs));
  sw.name = sweepNameOption(args);
  return sw;
}

namespace {

// --shard and --points: which of the sweep's points this process runs.
SweepShare shareFromArgs(const Args& args, const SweepSpec& sw) {
  SweepShare share;
  if (auto u = args.value("sweep-uuid")) {
    if (!isUuid(*u)) throw UsageError("--sweep-uuid: '" + *u + "' is not a UUID (8-4-4-4-12 hex digits)");
    share.uuid = *u;
  }
  std::vector<size_t> among;
  if (auto p = args.value("points")) {
    std::string problem;
    auto list = parsePointList(*p, &problem);
    if (!list) throw UsageError("--points: " + problem);
    const size_t total = sw.pointCount();
    if (!list->empty() && list->back() >= total)
      throw UsageError("--points: point " + std::to_string(list->back()) + " is not in this sweep (it has " +
                       std::to_string(total) + " points, 0 to " + std::to_string(total - 1) + ")");
    among = *list;
    share.points = among;
  }
  if (auto k = args.value("shard")) {
    std::string problem;
    auto shard = parseShard(*k, &problem);
    if (!shard) throw UsageError("--shard: " + problem);
    share.points = shardPoints(sw, *shard, among);
  }
  return share;
}

}  // namespace

int cmdSweep(const std::vector<std::string>& argv) {
  Args args(kSweepDef, argv);
  applyPythonOption(args);
  CliSession& s = session();
  SweepSpec sw = sweepSpecFromArgs(args);
  if (args.flag("slurm")) return submitSlurmSweep(args, sw);
  for (const char* o : {"partition", "gres", "tasks", "parallel", "time", "account", "out"})
    if (args.value(o)) throw UsageError("--" + std::string(o) + " needs --slurm");
  if (args.flag("dry-run") || args.flag("wait") || !args.values("sbatch-arg").empty())
    throw UsageError("--dry-run, --wait and --sbatch-arg need --slurm");
  const SweepShare share = shareFromArgs(args, sw);
  const size_t grid = sw.pointCount() / std::max<size_t>(sw.backends.size(), 1);
  auto store = openStore(databasePath(args));
  const bool json = args.flag("json"), quiet = args.flag("quiet") || json;
  if (!json) s.printNotes();
  RecordedSweep recorded(*store, sw, share);
  const size_t total = recorded.result().planned;
  if (!quiet) {
    std::cerr << "sweep S" << recorded.id() << " '" << printable(recorded.spec().name) << "': " << total << " points ("
              << grid << " specs x " << sw.backends.size() << " backends";
    if (share.points) std::cerr << "; " << (args.value("shard") ? "shard " + *args.value("shard") : "the points given") << " of " << sw.pointCount();
    std::cerr << ") -> " << store->path() << "\n";
  }
  SweepRunner runner(s.registry);
  runner.setCapture(s.capture);
  InterruptGuard guard;
  builtinBackendSettings().setCancel(&g_cancel);  // Ctrl-C also stops a torch import in progress
  RecordedSweepCallbacks cb;
  cb.saved = [&](const RunResult& r) {
    if (quiet) return;
    std::cerr << "  R" << r.id << " " << r.backend << " " << summary(r.spec) << ": " << statusText(r);
    if (r.status == RunStatus::ok)
      std::cerr << ", " << timeCell(r) << ", peak " << formatBytes(r.memory.measured_peak);
    else
      std::cerr << " (" << printable(r.message.substr(0, 100)) << ")";
    std::cerr << "\n";
  };
  cb.progress = [&](const SweepProgress& p) {
    if (!quiet && !p.current.empty())
      std::cerr << "[" << p.done + 1 << "/" << total << "] " << p.current
                << (p.eta_s >= 0 ? "  (ETA " + formatDuration(p.eta_s) + ")" : "") << "\n";
  };
  const RecordedSweepResult& result = recorded.run(runner, cb, &g_cancel);
  const std::string title = "sweep S" + std::to_string(result.sweep_id) + " '" + printable(result.name) + "'";
  if (result.state == "failed") {
    if (!json) std::cout << title << " (failed)\n" << resultsTable(result.runs).render();
    throw std::runtime_error(result.error);
  }
  if (json) {
    nlohmann::json out = {{"sweep_id", result.sweep_id},
                          {"name", result.name},
                          {"cancelled", result.cancelled()},
                          {"runs", nlohmann::json::array()}};
    for (const auto& r : result.runs) out["runs"].push_back(toJson(r));
    std::cout << jsonOutput(out) << "\n";
  } else {
    std::cout << title << (result.cancelled() ? " (cancelled)" : "") << "\n" << resultsTable(result.runs).render();
    std::cout << "saved " << result.runs.size() << " of " << total << " points to " << store->path() << "\n";
  }
  return sweepExitStatus(result);
}

}  // namespace attnscope::cli
