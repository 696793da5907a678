#pragma once
// Shared by the torch backend tests: specs, a run through the real engine, fake Pythons, and the
// worker processes this test process has started (found in /proc, so the tests see what a user
// would: a process that is or is not there).

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/engine/run_engine.h"
#include "core/spec/workload_spec.h"
#include "kernels/torch/torch_backend.h"
#include "tests/support/spec_builder.h"

namespace attnscope::torchtest {

inline WorkloadSpec spec(int64_t heads, int64_t seq_q, int64_t seq_kv, int64_t head_dim, const std::string& mask = "none",
                         int64_t kv_heads = 0, DType dtype = DType::fp32) {
  return test::specOf({.heads = heads, .kv_heads = kv_heads, .seq_q = seq_q, .seq_kv = seq_kv, .head_dim = head_dim,
                       .dtype = dtype, .mask = mask, .seed = 7});
}

inline RunResult runOnce(Backend& b, const WorkloadSpec& s, const std::atomic<bool>* cancel = nullptr, int reps = 1) {
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = reps;
  opt.cancel = cancel;
  return runPoint(b, s, opt);
}

// A fake "python": a shell script that ignores the worker script and plays `body`.
inline std::string fakePython(const std::string& name, const std::string& body) {
  const std::string path = std::string(ATTNSCOPE_TORCH_TEST_DIR) + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

// The hello of a usable torch 2.15 without CUDA, as the real worker prints it.
inline std::string fakeHello() {
  return R"({"type":"hello","protocol":1,"python":"3.11.7","executable":"/fake/python","pid":1,"torch":"2.15.0",)"
         R"("torch_cuda":"","torch_cudnn":"","cuda_available":false,"cuda_reason":"fake","cuda_devices":[],)"
         R"("threads":1,"sdpa_kernel":true,"enable_gqa":true,"causal_lower_right":true})";
}

// A fake "python" that runs tests/torch/fake_torch_worker.py in `mode` with the system's python3.
inline std::string fakeWorker(const std::string& name, const std::string& mode) {
  return fakePython(name, "exec '" ATTNSCOPE_TEST_SYSTEM_PYTHON "' '" ATTNSCOPE_FAKE_TORCH_WORKER "' " + mode + " \"$@\"");
}

// Live (not zombie) descendants of process `root` (default: this one) whose command line mentions
// `marker`, leaving out the keeper: the worker is our grandchild, started by its keeper
// (kernels/torch/process_keeper.h).
inline std::vector<pid_t> workerPids(const std::string& marker = "attnscope_torch_worker.py", pid_t root = ::getpid()) {
  struct Proc {
    pid_t pid, ppid;
    bool live;
    std::string args;
  };
  std::vector<Proc> procs;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) continue;
    std::ifstream cmd(e.path() / "cmdline");
    procs.push_back({static_cast<pid_t>(std::stol(name)), static_cast<pid_t>(ppid), state != 'Z',
                     std::string((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>())});
  }
  std::vector<pid_t> tree = {root}, out;
  for (size_t i = 0; i < tree.size(); ++i)
    for (const Proc& p : procs)
      if (p.ppid == tree[i]) {
        tree.push_back(p.pid);
        // The keeper's command line names the worker too; the worker is what a user would see.
        const bool keeper = p.args.find("attnscope-torch-keeper") < p.args.find('\0');
        if (p.live && !keeper && p.args.find(marker) != std::string::npos) out.push_back(p.pid);
      }
  return out;
}

// /proc/PID/stat's state letter ('R', 'S', 'T', 'Z', ...), 0 when there is no such process.
inline char processState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() ? 0 : line[close + 2];
}

inline pid_t parentOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  long ppid = -1;
  char state = 0;
  if (close == std::string::npos || std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) != 2) return -1;
  return static_cast<pid_t>(ppid);
}

// A torch run's measured peak against its predicted one: within `tolerance` either way (the
// profiler's scalar tensors), except that with bf16 or fp16 the CPU flash backward's GEMMs
// (cpublas through oneDNN) allocate scratch inside the kernel that the explainer leaves out: one
// block of 17-134 KiB per GEMM call, growing with the keys (measured on torch 2.15, Zen 4: +27 KiB
// at H4 D8 L64 S80, +131 KiB at S600, +450 KiB = 2.7 % at H8 D64 L1024). There the measured peak
// may exceed the plan by up to 192 KiB + 4 % more: a bound on what is not modelled, stated in
// docs/TORCH_WORKER.md, not a fit. Returns the difference, measured - predicted.
inline int64_t expectPeakAsPredicted(const RunResult& r, const WorkloadSpec& s, int64_t tolerance) {
  EXPECT_TRUE(r.plan.known) << r.plan.unknown_reason;
  EXPECT_GT(r.memory.predicted_peak, 0);
  const int64_t diff = r.memory.measured_peak - r.memory.predicted_peak;
  auto ran = r.facts.find("torch.ran");
  const bool scratch = s.pass == Pass::train && s.dtype != DType::fp32 && ran != r.facts.end() && ran->second == "flash";
  EXPECT_GE(diff, -tolerance) << "measured " << r.memory.measured_peak << " predicted " << r.memory.predicted_peak;
  EXPECT_LE(diff, tolerance + (scratch ? 192 * 1024 + r.memory.predicted_peak / 25 : 0))
      << "measured " << r.memory.measured_peak << " predicted " << r.memory.predicted_peak;
  return diff;
}

}  // namespace attnscope::torchtest
