#include "core/cluster/slurm.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/base/format.h"
#include "core/files/command_path.h"
#include "core/spec/sweep_spec.h"

namespace attnscope {

namespace fs = std::filesystem;

bool slurmOnPath() { return !resolveCommand("sbatch").empty() && !resolveCommand("squeue").empty(); }

void requireSlurm() {
  if (!slurmOnPath())
    throw std::runtime_error("Slurm's commands (sbatch, squeue, sacct) are not on PATH: --slurm and `attnscope slurm` "
                             "run where jobs are submitted (a login node); scripts/slurm-local.sh starts a one-node "
                             "Slurm on this machine");
}

std::pair<int64_t, int64_t> slurmLimits() {
  int64_t max_array = 0, max_jobs = 0;
  if (resolveCommand("scontrol").empty()) return {0, 0};
  const CommandOutput c = runCommand({"scontrol", "show", "config"});
  std::istringstream in(c.out);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trimmed(line.substr(0, eq)), value = trimmed(line.substr(eq + 1));
    try {
      if (key == "MaxArraySize") max_array = std::stoll(value);
      if (key == "MaxJobCount") max_jobs = std::stoll(value);
    } catch (const std::exception&) {
    }
  }
  return {max_array, max_jobs};
}

int64_t slurmTaskCap(int64_t max_array_size, int64_t max_job_count, int64_t fallback) {
  int64_t cap = max_array_size > 0 ? max_array_size : fallback;
  if (max_job_count > 0) cap = std::min<int64_t>(cap, std::max<int64_t>(1, max_job_count / 2));
  return std::max<int64_t>(1, cap);
}

bool slurmStateEnded(const std::string& state) {
  static const std::set<std::string> live = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED"};
  return !live.count(state);
}

std::map<int, SlurmTaskState> slurmArrayStates(const std::string& job, bool* have_sacct, bool* squeue_ok) {
  std::map<int, SlurmTaskState> out;
  auto parse = [&](const std::string& text) {
    std::istringstream in(text);
    std::string line;
    const std::string prefix = job + "_";
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ls(line);
      std::string cell;
      while (std::getline(ls, cell, '|')) f.push_back(trimmed(cell));
      if (f.size() < 2 || f[0].rfind(prefix, 0) != 0) continue;
      const std::string idx = f[0].substr(prefix.size());
      // "4711_[3-7]" is a pending range: squeue -r lists its tasks one by one.
      if (idx.empty() || idx.size() > 9 || !std::all_of(idx.begin(), idx.end(), [](unsigned char c) { return std::isdigit(c); }))
        continue;
      out[std::stoi(idx)] = {f[1].substr(0, f[1].find(' ')), f.size() > 2 ? f[2] : ""};  // "CANCELLED by 0" -> CANCELLED
    }
  };
  const CommandOutput sacct = runCommand({"sacct", "-n", "-P", "-X", "-j", job, "--format=JobID,State,Elapsed"});
  *have_sacct = sacct.status == 0;
  if (sacct.status == 0) parse(sacct.out);
  const CommandOutput q = runCommand({"squeue", "-h", "-r", "-j", job, "-o", "%i|%T|%M"});
  // The live view wins while a task is queued or running. squeue refuses a job id it no longer
  // knows (rc 1, "Invalid job id"): then every task has ended, which is also an answer.
  *squeue_ok = q.status == 0 || q.err.find("Invalid job id") != std::string::npos;
  if (q.status == 0) parse(q.out);
  return out;
}

SlurmPoll pollSlurmSweep(Store& store, int64_t sweep_id) {
  const auto info = store.sweep(sweep_id);
  if (!info) throw std::invalid_argument("no sweep S" + std::to_string(sweep_id) + " in " + store.path());
  SlurmPoll poll;
  poll.total = sweepSpecFromJson(info->spec).pointCount();
  poll.tasks = store.slurmTasks(sweep_id);
  std::set<std::string> jobs;
  for (const auto& t : poll.tasks) jobs.insert(t.job_id);
  std::map<std::string, std::map<int, SlurmTaskState>> states;
  std::map<std::string, bool> squeue_ok;
  bool have_sacct = false;
  for (const auto& j : jobs) {
    bool ok = false, acct = false;
    states[j] = slurmArrayStates(j, &acct, &ok);
    squeue_ok[j] = ok;
    have_sacct = have_sacct || acct;
  }
  for (auto& t : poll.tasks) {
    auto it = states[t.job_id].find(t.task);
    std::error_code ec;
    if (it != states[t.job_id].end()) {
      t.state = it->second.state;
      t.elapsed = it->second.elapsed;
    } else if (squeue_ok[t.job_id] && !slurmStateEnded(t.state)) {
      // Neither queued nor running (squeue -r lists every such task) and no record in sacct: a
      // task cancelled before it started leaves none. Without accounting, its copied shard says
      // it completed (the script's last step).
      if (fs::exists(t.shard, ec)) t.state = "COMPLETED";
      else t.state = have_sacct ? "CANCELLED" : "ENDED";
    }
    if (!slurmStateEnded(t.state)) poll.live = true;
    if (slurmStateEnded(t.state) && !t.merged && fs::exists(t.shard, ec)) {
      const MergeReport r = store.merge(t.shard);
      if (!r.refused.empty()) {
        poll.refused.push_back(t.job_id + "_" + std::to_string(t.task) + ": " + r.refused);
      } else {
        t.merged = true;
        ++poll.merged_now;
      }
    }
    ++poll.counts[t.state];
  }
  store.saveSlurmTasks(sweep_id, poll.tasks);
  poll.present = store.pointIndexes(sweep_id).size();
  return poll;
}

}  // namespace attnscope
