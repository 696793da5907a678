// merge, slurm, and `sweep --slurm`: sweeps beyond one machine. Each Slurm array task runs its
// shard (`sweep --shard K/N`) into a database on the node's local disk and copies it to the
// shared folder when done; SQLite is never shared over a network filesystem. `merge` brings the
// shards (or any databases) together, idempotently.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/cli_common.h"
#include "app/cli_table.h"
#include "app/commands.h"
#include "core/base/format.h"
#include "core/base/uuid.h"
#include "core/cluster/slurm.h"
#include "core/files/command_path.h"
#include "core/engine/shard.h"
#include "core/result/environment.h"
#include "core/store/store.h"

namespace attnscope::cli {
namespace {

namespace fs = std::filesystem;

// ---- merge -------------------------------------------------------------------------------------

nlohmann::json reportJson(const MergeReport& r) {
  nlohmann::json sweeps = nlohmann::json::array();
  for (int64_t id : r.sweeps) sweeps.push_back("S" + std::to_string(id));
  return {{"source", r.source},
          {"merged", r.refused.empty()},
          {"refused", r.refused},
          {"sweeps_added", r.sweeps_added},
          {"sweeps_joined", r.sweeps_joined},
          {"runs_added", r.runs_added},
          {"runs_skipped", r.runs_skipped},
          {"recordings_added", r.recordings_added},
          {"recordings_skipped", r.recordings_skipped},
          {"events_added", r.events_added},
          {"sweeps", sweeps}};
}

std::string reportLine(const MergeReport& r) {
  if (!r.refused.empty()) return "refused " + printable(r.source) + ": " + printable(r.refused);
  std::string ids;
  for (int64_t id : r.sweeps) ids += (ids.empty() ? "" : ", ") + std::string("S") + std::to_string(id);
  std::ostringstream os;
  os << "merged " << printable(r.source) << ": " << r.sweeps_added << " sweeps added, " << r.sweeps_joined << " joined"
     << (ids.empty() ? "" : " (" + ids + ")") << "; " << r.runs_added << " runs added, " << r.runs_skipped
     << " already here; " << r.recordings_added << " recordings added, " << r.recordings_skipped << " already here";
  return os.str();
}

}  // namespace

const CommandDef kMergeDef{
    "merge", "merge SRC... --into DB [--json]",
    "Bring the sweeps, runs, traces, environments and recordings of other AttnScope databases into one (the shards "
    "of a cluster sweep, or runs made on another machine).",
    {{"into", "DB", "the database to merge into (created when it does not exist)"}, jsonOption()},
    1000,
    "Each source is read only and merged in one transaction: a merge killed part way leaves DB as it was before "
    "that source, and running it again completes it. Merging is idempotent: runs are identified by UUID and by "
    "(sweep UUID, point index), so a source merged twice adds nothing, and the shards of one sweep become one sweep, "
    "each point keeping the environment (machine, GPU, driver, torch) that ran it. A source that is not an AttnScope "
    "database, is damaged (attnscope check) or has a newer schema is refused untouched, and the others still merge. "
    "Exit status: 0 every source merged, 1 a source was refused or writing DB failed (I/O error, full disk), 2 bad "
    "input or a DB this user may not write (read-only)."};

int cmdMerge(const std::vector<std::string>& argv) {
  Args args(kMergeDef, argv);
  auto into = args.value("into");
  if (!into) throw UsageError("--into DB is required: the database to merge into");
  if (args.positionals().empty()) throw UsageError("merge needs at least one source database (SRC...)");
  auto store = openStore(*into);
  const bool json = args.flag("json");
  nlohmann::json out = {{"into", store->path()}, {"sources", nlohmann::json::array()}};
  bool refused = false;
  size_t n = 0;
  for (const std::string& src : args.positionals()) {
    ++n;
    if (!json) std::cerr << "[" << n << "/" << args.positionals().size() << "] " << printable(src) << "\n";
    MergeReport r = store->merge(src);
    refused = refused || !r.refused.empty();
    if (json) out["sources"].push_back(reportJson(r));
    else std::cout << reportLine(r) << "\n";
  }
  if (json) std::cout << jsonOutput(out) << "\n";
  return refused ? 1 : 0;
}

namespace {

// ---- the sbatch script -------------------------------------------------------------------------

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string selfPath() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("attnscope") : p.string();
}

struct Submission {
  std::string partition;          // empty: the cluster's default
  std::string uuid;
  std::string name;
  std::vector<std::vector<size_t>> tasks;  // points per task
  bool by_shard = true;  // tasks run --shard K/N (the first submission), else --points lines of points_file
  std::string points_file;
};

// The sbatch script of one array. Each task: its points into a database on the node's local disk,
// then copied to DIR/shards (as .part, then renamed, so a shard is never read half written).
std::string sbatchScript(const Args& args, const fs::path& dir, const fs::path& spec_file, const Submission& sub) {
  std::ostringstream s;
  const size_t n = sub.tasks.size();
  s << "#!/bin/bash\n"
    << "# AttnScope sweep '" << sub.name << "' (" << sub.uuid << "), written by attnscope sweep --slurm.\n"
    << "#SBATCH --job-name=attnscope-" << sub.uuid.substr(0, 8) << "\n"
    << "#SBATCH --array=0-" << (n - 1);
  if (auto m = args.value("parallel")) s << "%" << *m;
  s << "\n#SBATCH --output=" << (dir / "logs" / "%A_%a.out").string() << "\n"
    << "#SBATCH --ntasks=1\n";
  if (!sub.partition.empty()) s << "#SBATCH --partition=" << sub.partition << "\n";
  if (auto g = args.value("gres")) s << "#SBATCH --gres=" << *g << "\n";
  if (auto t = args.value("time")) s << "#SBATCH --time=" << *t << "\n";
  if (auto a = args.value("account")) s << "#SBATCH --account=" << *a << "\n";
  for (const auto& x : args.values("sbatch-arg")) s << "#SBATCH " << x << "\n";
  s << "set -u\n"
    << "task=${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}\n"
    << "local_dir=${SLURM_TMPDIR:-${TMPDIR:-/tmp}}/attnscope-${SLURM_ARRAY_JOB_ID}_${task}\n"
    << "mkdir -p \"$local_dir\" " << shellQuote((dir / "shards").string()) << "\n"
    << "shard=\"$local_dir/shard.sqlite\"\n";
  if (sub.by_shard) {
    s << "which=(--shard \"$task/" << n << "\")\n";
  } else {
    s << "which=(--points \"$(sed -n \"$((task + 1))p\" " << shellQuote(sub.points_file) << ")\")\n";
  }
  s << shellQuote(selfPath()) << " sweep --spec-file " << shellQuote(spec_file.string()) << " \"${which[@]}\" --sweep-uuid "
    << sub.uuid << " --db \"$shard\"";
  if (auto p = args.value("python")) s << " --python " << shellQuote(*p);
  s << "\nstatus=$?\n"
    << "if [ -s \"$shard\" ]; then\n"
    << "  dest=" << shellQuote((dir / "shards").string()) << "/${SLURM_ARRAY_JOB_ID}_${task}.sqlite\n"
    << "  # A sweep that died leaves its journal beside the file: it travels too (merge reads through it).\n"
    << "  if [ -e \"$shard-wal\" ]; then cp \"$shard-wal\" \"$dest-wal\" || status=1; fi\n"
    << "  cp \"$shard\" \"$dest.part\" && mv -f \"$dest.part\" \"$dest\" || status=1\n"
    << "fi\n"
    << "rm -rf \"$local_dir\"\n"
    << "exit $status\n";
  return s.str();
}

std::string shardPath(const fs::path& dir, const std::string& job, int task) {
  return (dir / "shards" / (job + "_" + std::to_string(task) + ".sqlite")).string();
}

std::atomic<bool> g_stop_wait{false};
extern "C" void onWaitInterrupt(int) { g_stop_wait.store(true); }

// Follows the sweep's tasks until none is queued or running, merging each shard as its task
// ends; prints each task's state as it changes and the merged progress. Returns the exit status.
int followSweep(Store& store, int64_t sweep_id, bool wait, bool quiet) {
  g_stop_wait = false;
  if (wait) {
    std::signal(SIGINT, onWaitInterrupt);
    std::signal(SIGTERM, onWaitInterrupt);
  }
  if (!store.sweep(sweep_id)) throw UsageError("no sweep S" + std::to_string(sweep_id) + " in " + store.path());
  std::map<std::string, std::string> shown;  // "job_task" -> state printed
  std::string last_line;
  int status = 0;
  size_t total = 0, present = 0;
  bool live = false;
  for (;;) {
    const SlurmPoll poll = pollSlurmSweep(store, sweep_id);
    total = poll.total;
    present = poll.present;
    live = poll.live;
    for (const auto& r : poll.refused) {
      std::cerr << "task " << printable(r) << " (shard refused)\n";
      status = 1;
    }
    for (const auto& t : poll.tasks) {
      const std::string key = t.job_id + "_" + std::to_string(t.task);
      if (!quiet && shown[key] != t.state + (t.merged ? "+" : "")) {
        const bool started = !t.elapsed.empty() && t.elapsed != "0:00" && t.elapsed != "00:00:00";
        std::cerr << "  task " << key << ": " << t.state << (started ? " after " + t.elapsed : "")
                  << (t.merged ? ", shard merged" : "") << "\n";
        shown[key] = t.state + (t.merged ? "+" : "");
      }
    }
    if (!quiet) {
      std::string summary;
      for (const auto& [state, n] : poll.counts) summary += (summary.empty() ? "" : ", ") + std::to_string(n) + " " + state;
      const std::string line = "S" + std::to_string(sweep_id) + ": " + std::to_string(present) + "/" + std::to_string(total) +
                               " points merged; tasks: " + summary;
      if (line != last_line) std::cerr << line << "\n";  // printed when it changes
      last_line = line;
    }
    if (!wait || !poll.live) break;
    if (g_stop_wait) {
      std::cerr << "stopped following S" << sweep_id << "; its tasks keep running: `attnscope slurm status S" << sweep_id
                << "` follows them and merges their shards\n";
      status = 130;
      break;
    }
    for (int i = 0; i < 20 && !g_stop_wait; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (wait) {
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  if (status != 130 && !live && present < total && (wait || !quiet)) {
    std::cerr << "S" << sweep_id << " is missing " << total - present
              << " points; `attnscope slurm resume S" << sweep_id << "` submits only those\n";
    status = std::max(status, 1);
  }
  return status;
}

// Submits `sub` and records it: the sweep row's cluster facts (state submitted) and one
// slurm_tasks row per task. Returns the job id.
std::string submit(Store& store, int64_t sweep_id, const fs::path& dir, const std::string& script_path,
                   const Submission& sub, nlohmann::json cluster) {
  CommandOutput c = runCommand({"sbatch", "--parsable", script_path});
  if (c.status != 0)
    throw std::runtime_error("sbatch refused the job (exit " + std::to_string(c.status) + "): " + trimmed(c.err) +
                             "; the script is " + script_path);
  std::string job = trimmed(c.out);
  job = job.substr(0, job.find(';'));  // "4711;cluster"
  if (job.empty() || !std::all_of(job.begin(), job.end(), ::isdigit))
    throw std::runtime_error("sbatch printed no job id ('" + trimmed(c.out) + "')");
  std::vector<SlurmTask> tasks;
  for (size_t k = 0; k < sub.tasks.size(); ++k)
    tasks.push_back({job, static_cast<int>(k), formatPointList(sub.tasks[k]), shardPath(dir, job, static_cast<int>(k)), "PENDING", "", false});
  cluster["jobs"].push_back(job);
  store.setSweepCluster(sweep_id, cluster, "submitted");
  store.saveSlurmTasks(sweep_id, tasks);
  return job;
}

}  // namespace

int submitSlurmSweep(const Args& args, const SweepSpec& sweep) {
  for (const char* o : {"shard", "points", "sweep-uuid"})
    if (args.value(o)) throw UsageError("--" + std::string(o) + " and --slurm are exclusive: --slurm splits the sweep itself");
  const bool dry = args.flag("dry-run");
  if (dry && args.flag("wait")) throw UsageError("--dry-run and --wait are exclusive");
  const size_t total = sweep.pointCount();
  int tasks = args.intValue("tasks", static_cast<int>(std::clamp<size_t>((total + 3) / 4, 1, 64)), 1, kMaxShards);
  (void)args.intValue("parallel", 1, 1, kMaxShards);  // checked here, written into the script as given
  std::vector<std::string> partitions = {""};
  if (auto p = args.value("partition")) partitions = splitList("partition", *p);
  if (!dry) requireSlurm();
  std::string capped;
  {
    // More points than one array may have tasks are bundled per task.
    const auto [max_array, max_jobs] = slurmLimits();
    const int64_t cap = slurmTaskCap(max_array, max_jobs, kMaxShards);
    if (tasks > cap) {
      capped = " (capped from " + std::to_string(tasks) + " by MaxArraySize " + std::to_string(max_array) +
               " / MaxJobCount " + std::to_string(max_jobs) + ")";
      tasks = static_cast<int>(cap);
    }
  }
  tasks = static_cast<int>(std::min<size_t>(static_cast<size_t>(tasks), total));
  const fs::path dir = fs::absolute(args.value("out").value_or("attnscope-slurm"));
  std::unique_ptr<Store> store;
  if (!dry) store = openStore(databasePath(args));
  int status = 0;
  for (const std::string& partition : partitions) {
    SweepSpec sw = sweep;
    if (!partition.empty() && partitions.size() > 1) sw.name = (sw.name.empty() ? "sweep" : sw.name) + " [" + partition + "]";
    if (sw.name.empty()) sw.name = "slurm sweep";
    Submission sub;
    sub.partition = partition;
    sub.uuid = newUuid();
    sub.name = sw.name;
    for (int k = 0; k < tasks; ++k) sub.tasks.push_back(shardPoints(sw, {k, tasks}));
    const fs::path sweep_dir = dir / sub.uuid.substr(0, 8);
    const fs::path spec_file = sweep_dir / "sweep.json";
    const std::string script = sbatchScript(args, sweep_dir, spec_file, sub);
    if (dry) {
      std::cout << "# " << total << " points in " << tasks << " tasks" << capped << "; would write " << spec_file.string()
                << " and " << (sweep_dir / "sweep.sbatch").string() << ":\n"
                << script;
      continue;
    }
    fs::create_directories(sweep_dir / "logs");
    fs::create_directories(sweep_dir / "shards");
    {
      std::ofstream f(spec_file);
      f << toJson(sw).dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write " + spec_file.string());
    }
    const std::string script_path = (sweep_dir / "sweep.sbatch").string();
    {
      std::ofstream f(script_path);
      f << script;
      if (!f) throw std::runtime_error("cannot write " + script_path);
    }
    // The sweep row first (running, owned by us), then submitted with its job: a failed sbatch
    // leaves it failed, never submitted without a job.
    const int64_t id = store->createSweep(sw, store->saveEnvironment(captureEnvironment()), sub.uuid);
    nlohmann::json cluster = {{"scheduler", "slurm"},  {"tasks", tasks}, {"shared_dir", sweep_dir.string()},
                              {"partition", partition}, {"script", script_path}, {"jobs", nlohmann::json::array()}};
    std::string job;
    try {
      job = submit(*store, id, sweep_dir, script_path, sub, cluster);
    } catch (...) {
      store->setSweepState(id, "failed");
      throw;
    }
    std::cerr << "sweep S" << id << " '" << printable(sw.name) << "': " << total << " points in " << tasks << " tasks"
              << capped << " submitted as Slurm job " << job << (partition.empty() ? "" : " on " + partition) << "; shards in "
              << (sweep_dir / "shards").string() << "\n";
    std::cout << "S" << id << " job " << job << "\n";
    if (args.flag("wait")) status = std::max(status, followSweep(*store, id, true, args.flag("quiet")));
  }
  return status;
}

const CommandDef kSlurmDef{
    "slurm", "slurm status|resume S [--db FILE] [--json]",
    "Follow a sweep submitted with sweep --slurm: status lists its tasks (sacct's state, elapsed time, the points "
    "each saved) and merges the shards of ended tasks; resume resubmits only the missing points.",
    {dbOption(), jsonOption(), {"wait", "", "resume: follow the new job until it ends, merging its shards"}},
    2,
    "resume submits the points that no task saved (tasks that failed, were cancelled, timed out or ran out of "
    "memory) as a new array with the first submission's options, never a point already saved; it refuses while "
    "tasks are still queued or running. Exit status: 0 done, 1 a shard was refused or points are missing (status) "
    "or sbatch refused (resume), 2 bad input."};

int cmdSlurm(const std::vector<std::string>& argv) {
  Args args(kSlurmDef, argv);
  if (args.positionals().size() != 2) throw UsageError("usage: attnscope slurm status|resume S");
  const std::string verb = args.positionals()[0];
  if (verb != "status" && verb != "resume") throw UsageError("slurm: unknown action '" + verb + "' (status, resume)");
  const ItemId id = parseId(args.positionals()[1]);
  if (id.is_run) throw UsageError("slurm " + verb + " takes a sweep (S<n>), not a run");
  requireSlurm();
  auto store = openStore(databasePath(args));
  auto info = store->sweep(id.id);
  if (!info) throw UsageError("no sweep S" + std::to_string(id.id) + " in " + store->path());
  if (info->cluster.is_null() || info->cluster.value("scheduler", "") != "slurm")
    throw UsageError("S" + std::to_string(id.id) + " was not submitted to Slurm (sweep --slurm)");
  const bool json = args.flag("json");
  int status = followSweep(*store, id.id, false, json);
  const SweepSpec spec = sweepSpecFromJson(info->spec);
  const std::vector<int64_t> present = store->pointIndexes(id.id);
  const std::set<int64_t> have(present.begin(), present.end());
  std::vector<SlurmTask> tasks = store->slurmTasks(id.id);
  if (verb == "status") {
    nlohmann::json out = {{"sweep", "S" + std::to_string(id.id)}, {"points", spec.pointCount()},
                          {"saved", present.size()}, {"tasks", nlohmann::json::array()}};
    Table t({"task", "state", "elapsed", "points", "saved", "merged"});
    for (const auto& task : tasks) {
      std::string problem;
      const auto pts = parsePointList(task.points, &problem).value_or(std::vector<size_t>{});
      size_t saved = 0;
      for (size_t p : pts) saved += have.count(static_cast<int64_t>(p));
      out["tasks"].push_back({{"task", task.job_id + "_" + std::to_string(task.task)}, {"state", task.state},
                              {"elapsed", task.elapsed}, {"points", pts.size()}, {"saved", saved}, {"merged", task.merged}});
      t.add({task.job_id + "_" + std::to_string(task.task), task.state, task.elapsed, std::to_string(pts.size()),
                std::to_string(saved), task.merged ? "yes" : "no"});
    }
    if (json) {
      std::cout << jsonOutput(out) << "\n";
    } else {
      std::cout << "sweep S" << id.id << " '" << printable(info->name) << "': " << present.size() << " of "
                << spec.pointCount() << " points saved\n"
                << t.render();
    }
    return present.size() < spec.pointCount() ? 1 : status;
  }
  // resume
  for (const auto& task : tasks)
    if (!slurmStateEnded(task.state))
      throw UsageError("S" + std::to_string(id.id) + ": task " + task.job_id + "_" + std::to_string(task.task) + " is " +
                       task.state + "; resume once no task is queued or running");
  std::vector<size_t> missing;
  for (size_t p = 0; p < spec.pointCount(); ++p)
    if (!have.count(static_cast<int64_t>(p))) missing.push_back(p);
  if (missing.empty()) {
    std::cout << "S" << id.id << ": every point is saved; nothing to resume\n";
    return 0;
  }
  const fs::path dir = info->cluster.value("shared_dir", std::string());
  int n = std::min<int>(info->cluster.value("tasks", 1), static_cast<int>(missing.size()));
  Submission sub;
  sub.partition = info->cluster.value("partition", std::string());
  sub.uuid = info->uuid;
  sub.name = info->name;
  for (int k = 0; k < n; ++k) sub.tasks.push_back(shardPoints(spec, {k, n}, missing));
  sub.by_shard = false;
  const int attempt = static_cast<int>(info->cluster.value("jobs", nlohmann::json::array()).size());
  sub.points_file = (dir / ("resume-" + std::to_string(attempt) + ".points")).string();
  {
    std::ofstream f(sub.points_file);
    for (const auto& pts : sub.tasks) f << formatPointList(pts) << "\n";
    if (!f) throw std::runtime_error("cannot write " + sub.points_file);
  }
  // The first submission's options, read back from its script's #SBATCH lines.
  const std::string first_script = info->cluster.value("script", std::string());
  std::vector<std::string> argv2 = {"--spec-file", (dir / "sweep.json").string()};
  std::string script;
  {
    std::ifstream in(first_script);
    std::string line, header;
    while (std::getline(in, line))
      if (line.rfind("#SBATCH --array=", 0) == 0) {
        const size_t pct = line.find('%');
        header += "#SBATCH --array=0-" + std::to_string(n - 1) + (pct == std::string::npos ? "" : line.substr(pct)) + "\n";
      } else if (line.rfind("#SBATCH", 0) == 0 || line.rfind("#!", 0) == 0 || line.rfind("# ", 0) == 0) {
        header += line + "\n";
      }
    Args none(kSlurmDef, {});
    const std::string body = sbatchScript(none, dir, dir / "sweep.json", sub);
    script = header + body.substr(body.find("set -u\n"));
  }
  const std::string script_path = (dir / ("resume-" + std::to_string(attempt) + ".sbatch")).string();
  {
    std::ofstream f(script_path);
    f << script;
  }
  const std::string job = submit(*store, id.id, dir, script_path, sub, info->cluster);
  std::cout << "S" << id.id << ": " << missing.size() << " missing points resubmitted in " << n << " tasks as Slurm job " << job << "\n";
  if (args.flag("wait")) return followSweep(*store, id.id, true, json);
  return 0;
}

}  // namespace attnscope::cli
