// The torch backends with the real torch of ATTNSCOPE_TEST_PYTHON (scripts/torch-venv.sh: a PyPI
// torch used on the CPU). Without it the test exits 77 (skipped) and says why.
//
// Accuracy: every torch.cpu backend against the float64 reference through the real run engine,
// on awkward shapes and every mask kind. Memory: torch's measured peak against the explainer's
// prediction. Dispatch: the kernel recorded for torch.cpu.auto against torch._fused_sdp_choice
// asked independently. Failures: a forced kernel torch cannot run, a worker killed mid-run,
// cancel.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include "kernels/torch/torch_python.h"
#include "tests/torch/real_torch_test.h"
#include "tests/torch/torch_test_support.h"

namespace attnscope {
namespace {

using namespace torchtest;

struct TorchBackends : RealTorchTest {};

struct Case {
  const char* what;
  WorkloadSpec spec;
};

std::vector<Case> awkwardCases() {
  std::vector<Case> c = {
      {"seq 1", spec(2, 1, 1, 8)},
      {"seq 97, head_dim 59", spec(2, 97, 97, 59)},
      {"head_dim 8, Lq < Lkv", spec(2, 33, 97, 8)},
      {"GQA 4/2", spec(4, 64, 64, 16, "none", 2)},
      {"MQA 4/1, Lq != Lkv", spec(4, 40, 72, 16, "none", 1)},
      {"causal", spec(2, 97, 97, 16, "causal")},
      {"causal Lq < Lkv (bottom-right)", spec(2, 33, 97, 16, "causal")},
      {"causal Lq > Lkv (rows without keys)", spec(2, 97, 33, 16, "causal")},
      {"window:16", spec(2, 97, 97, 16, "window:16")},
      {"window:8, Lq != Lkv", spec(2, 40, 97, 8, "window:8")},
      {"block:32", spec(2, 97, 97, 16, "block:32")},
      {"dense:0.5 broadcast", spec(2, 97, 97, 16, "dense:0.5")},
      {"dense:0.5 per head, GQA", spec(4, 64, 80, 8, "dense:0.5", 2)},
      {"bf16", spec(2, 97, 97, 59, "causal", 0, DType::bf16)},
      {"fp16", spec(2, 97, 64, 16, "dense:0.7", 0, DType::fp16)},
  };
  c[12].spec.mask_layout = MaskLayout::per_head;
  return c;
}

// Whether the run's torch (its "torch" fact, e.g. "2.4.1+cu121") is older than major.minor.
bool torchBefore(const RunResult& r, int major, int minor) {
  const std::string v = r.facts.count("torch") ? r.facts.at("torch") : "";
  int got_major = 0, got_minor = 0;
  if (std::sscanf(v.c_str(), "%d.%d", &got_major, &got_minor) != 2) return false;
  return got_major < major || (got_major == major && got_minor < minor);
}

TEST_F(TorchBackends, EveryCpuBackendMatchesTheFloat64Reference) {
  for (torch::TorchBackend* b : {&autoB, &mathB, &flashB}) {
    for (const Case& c : awkwardCases()) {
      RunResult r = runOnce(*b, c.spec);
      SCOPED_TRACE(b->id() + " " + c.what + " " + summary(c.spec) + ": " + r.message);
      if (c.spec.seq_q > c.spec.seqKv() && c.spec.mask.kind == MaskKind::causal && torchBefore(r, 2, 5)) {
        // torch < 2.5 returns NaN for a query with no visible key (2.4.1 measured): wrong, and said.
        EXPECT_EQ(r.status, RunStatus::wrong);
        EXPECT_NE(r.message.find("no visible key"), std::string::npos);
        continue;
      }
      ASSERT_EQ(r.status, RunStatus::ok);
      EXPECT_TRUE(r.accuracy.checked);
      EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
      EXPECT_EQ(r.accuracy.rows_checked, r.accuracy.rows_total);
      // A forced kernel is the one that ran.
      if (b->kernel() != "auto") {
        EXPECT_EQ(r.facts["torch.ran"], b->kernel());
      }
      EXPECT_EQ(r.facts["torch"].substr(0, 2), "2.");
      EXPECT_FALSE(r.trace.events.empty());
    }
  }
}

// Additive (float) masks reach torch as attn_mask of mask_dtype with our values (the worker
// says so in torch.call), and head_dim above 256, which torch runs on the CPU: each backend
// against the float64 reference, which adds the same bias rounded to mask_dtype.
TEST_F(TorchBackends, AdditiveMasksAndHeadDimsAbove256MatchTheFloat64Reference) {
  struct AdditiveCase {
    WorkloadSpec spec;
    const char* call;  // what the torch.call fact must say ("" for no mask)
  };
  auto additive = [](WorkloadSpec s, const char* mask, MaskLayout layout, std::optional<DType> md) {
    s.mask = parseMask(mask).mask.value();
    s.mask_layout = layout;
    s.mask_dtype = md;
    return s;
  };
  const std::vector<AdditiveCase> cases = {
      {additive(spec(2, 97, 97, 16), "additive", MaskLayout::broadcast, std::nullopt), "additive float32 tensor [1x1x97x97]"},
      {additive(spec(4, 64, 80, 8, "none", 2, DType::bf16), "additive:0.5", MaskLayout::per_head, DType::fp32),
       "additive float32 tensor [1x4x64x80]"},
      {additive(spec(2, 33, 97, 59, "none", 0, DType::fp16), "additive:0.5", MaskLayout::broadcast, std::nullopt),
       "additive float16 tensor [1x1x33x97]"},
      {additive(spec(2, 40, 72, 16, "none", 0, DType::bf16), "float", MaskLayout::per_head, std::nullopt),
       "additive bfloat16 tensor [1x2x40x72]"},
      {additive(spec(1, 65, 65, 320, "none", 0, DType::bf16), "additive:0.5", MaskLayout::per_head, DType::fp32),
       "additive float32 tensor [1x1x65x65]"},
      {spec(2, 33, 40, 512), ""},
      {spec(2, 40, 40, 257, "causal", 0, DType::fp16), ""},
  };
  for (torch::TorchBackend* b : {&autoB, &mathB, &flashB}) {
    for (const AdditiveCase& c : cases) {
      ASSERT_TRUE(validate(c.spec).empty()) << describe(validate(c.spec));
      RunResult r = runOnce(*b, c.spec);
      SCOPED_TRACE(b->id() + " " + summary(c.spec) + ": " + r.message);
      ASSERT_EQ(r.status, RunStatus::ok);
      EXPECT_TRUE(r.accuracy.passed()) << r.accuracy.max_abs_error << " > " << r.accuracy.tolerance;
      EXPECT_EQ(r.accuracy.rows_checked, r.accuracy.rows_total);
      if (*c.call) {
        EXPECT_NE(r.facts["torch.call"].find(c.call), std::string::npos) << r.facts["torch.call"];
      }
    }
  }
}

// Measured (the profiler's memory events, inputs added) against the explainer's plan for the
// installed torch. Tolerance: 1 KiB. The plans model every tensor the composite allocates; what
// they leave out are torch's 4-byte scalar tensors (scalar_tensor in the mask conversion and
// _safe_softmax) — a few bytes per call, far below 1 KiB and far below any buffer that matters.
TEST_F(TorchBackends, MeasuredPeakMatchesTheExplainersPrediction) {
  constexpr int64_t kTolerance = 1024;
  const std::vector<WorkloadSpec> specs = {spec(2, 256, 256, 64), spec(4, 512, 512, 64), spec(8, 256, 256, 8, "dense"),
                                           spec(4, 300, 300, 32, "causal"), spec(4, 128, 256, 16, "causal"),
                                           spec(4, 256, 256, 16, "window:64"), spec(8, 128, 128, 32, "none", 2),
                                           spec(4, 256, 256, 64, "none", 0, DType::bf16)};
  for (torch::TorchBackend* b : {&autoB, &mathB, &flashB}) {
    for (const WorkloadSpec& s : specs) {
      RunResult r = runOnce(*b, s);
      SCOPED_TRACE(b->id() + " " + summary(s) + ": " + r.message);
      ASSERT_EQ(r.status, RunStatus::ok);
      ASSERT_TRUE(r.plan.known) << r.plan.unknown_reason;
      ASSERT_GT(r.memory.predicted_peak, 0);
      std::printf("%-16s %-40s predicted %10lld measured %10lld (diff %+lld B)\n", b->id().c_str(), summary(s).c_str(),
                  static_cast<long long>(r.memory.predicted_peak), static_cast<long long>(r.memory.measured_peak),
                  static_cast<long long>(r.memory.measured_peak - r.memory.predicted_peak));
      EXPECT_LE(std::llabs(r.memory.measured_peak - r.memory.predicted_peak), kTolerance);
    }
  }
}

// A torch run's allocations carry the op that made them (as memory_viz names a block by its
// frame): bmm for the math path's scores and output, _softmax for P, never the factory
// (empty_strided) that only handed the memory over. The Timeline's bands show these names.
TEST_F(TorchBackends, EachAllocationIsNamedAfterTheOpThatMadeIt) {
  RunResult r = runOnce(mathB, spec(4, 256, 256, 64));
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  std::map<std::string, int> names;
  int allocations = 0;
  for (const TraceEvent& e : r.trace.events) {
    if (e.kind != EventKind::alloc) continue;
    ++allocations;
    ++names[e.name];
  }
  std::string listed;
  for (const auto& [n, count] : names) listed += "'" + n + "' x" + std::to_string(count) + " ";
  SCOPED_TRACE(listed);
  std::printf("allocations by name: %s\n", listed.c_str());
  ASSERT_GT(allocations, 3);
  EXPECT_EQ(names.count(""), 0u);
  EXPECT_GE(names["bmm"], 2);  // S = QK^T and O = PV
  EXPECT_GE(names["_softmax"], 1);
  EXPECT_EQ(names.count("empty_strided"), 0u);
}

// What torch._fused_sdp_choice says for these inputs, asked in one separate Python of our own
// (one line per spec: importing torch costs seconds).
std::vector<std::string> fusedChoicesOf(const std::vector<WorkloadSpec>& specs) {
  std::string code =
      "import torch\n"
      "names = {0: 'math', 1: 'flash', 2: 'efficient', 3: 'cudnn'}\n"
      "dts = {'fp32': torch.float32, 'bf16': torch.bfloat16, 'fp16': torch.float16}\n"
      "for (dt, b, h, hkv, lq, lkv, d, tensor_mask, causal) in [\n";
  for (const WorkloadSpec& s : specs) {
    const bool tensorMask = s.mask.kind == MaskKind::dense || s.mask.kind == MaskKind::window ||
                            s.mask.kind == MaskKind::block;
    code += "  ('" + std::string(toString(s.dtype)) + "', " + std::to_string(s.batch) + ", " + std::to_string(s.heads) +
            ", " + std::to_string(s.kvHeads()) + ", " + std::to_string(s.seq_q) + ", " + std::to_string(s.seqKv()) +
            ", " + std::to_string(s.headDim()) + ", " + (tensorMask ? "True" : "False") + ", " +
            (s.mask.kind == MaskKind::causal ? "True" : "False") + "),\n";
  }
  code +=
      "]:\n"
      "  q = torch.rand(b, h, lq, d, dtype=dts[dt]); k = torch.rand(b, hkv, lkv, d, dtype=dts[dt]); v = k.clone()\n"
      "  m = torch.ones(1, 1, lq, lkv, dtype=torch.bool) if tensor_mask else None\n"
      "  try:\n"
      "    choice = torch._fused_sdp_choice(q, k, v, m, 0.0, causal, enable_gqa=(h != hkv))\n"
      "  except TypeError:  # torch < 2.5 has no enable_gqa: K/V repeated, as the worker does\n"
      "    k = k.repeat_interleave(h // hkv, 1); v = k.clone()\n"
      "    choice = torch._fused_sdp_choice(q, k, v, m, 0.0, causal)\n"
      "  print(names[choice], flush=True)\n";
  const std::string path = std::string(ATTNSCOPE_TORCH_TEST_DIR) + "/fused_choice.py";
  std::ofstream(path) << code;
  std::vector<std::string> out;
  FILE* p = ::popen((std::string(testPython()) + " " + path + " 2>/dev/null").c_str(), "r");
  char buf[64];
  while (p && std::fgets(buf, sizeof buf, p)) {
    std::string line = buf;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    out.push_back(line);
  }
  if (p) ::pclose(p);
  return out;
}

TEST_F(TorchBackends, AutoRecordsTheKernelFusedSdpChoiceNames) {
  const std::vector<WorkloadSpec> specs = {spec(2, 64, 64, 16), spec(2, 64, 64, 16, "causal"),
                                           spec(2, 64, 96, 8, "dense"), spec(4, 64, 64, 16, "none", 2),
                                           spec(2, 64, 64, 16, "window:8", 0, DType::bf16),
                                           spec(2, 64, 64, 16, "none", 0, DType::fp16)};
  const std::vector<std::string> expected = fusedChoicesOf(specs);
  ASSERT_EQ(expected.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    RunResult r = runOnce(autoB, specs[i]);
    SCOPED_TRACE(summary(specs[i]) + ": " + r.message);
    ASSERT_EQ(r.status, RunStatus::ok);
    EXPECT_EQ(r.facts["torch.choice"], expected[i]);  // the worker's own _fused_sdp_choice
    EXPECT_EQ(r.facts["torch.ran"], expected[i]);     // the op the profiler saw run
  }
}

TEST_F(TorchBackends, ForcedKernelTorchCannotRunGivesItsStatusAndMessage) {
  // The CPU has no memory-efficient kernel: forcing it disables flash and math, and torch refuses.
  torch::TorchBackend efficientOnCpu{"cpu", "efficient", session()};
  RunResult r = runOnce(efficientOnCpu, spec(2, 64, 64, 16));
  EXPECT_EQ(r.status, RunStatus::unsupported);
  EXPECT_NE(r.message.find("No viable backend for scaled_dot_product_attention was found"), std::string::npos)
      << r.message;
  // The worker survives a refusal: the next point runs on it.
  EXPECT_EQ(runOnce(autoB, spec(2, 64, 64, 16)).status, RunStatus::ok);
}

TEST_F(TorchBackends, AnAllocationTorchCannotMakeOnTheCpuIsOom) {
  // The real torch with its address space capped, once imported, at 512 MiB above what it holds:
  // math's 1 GiB scores [1,1,16384,16384] cannot be allocated. torch raises a plain RuntimeError
  // ("DefaultCPUAllocator: can't allocate memory"), which is oom like a CUDA OOM, not error.
  const std::string capped = fakePython("python-capped", "exec '" + std::string(testPython()) + "' -c '\n"
      "import os, resource, runpy, sys\n"
      "import torch\n"
      "held = int(open(\"/proc/self/statm\").read().split()[0]) * os.sysconf(\"SC_PAGE_SIZE\")\n"
      "resource.setrlimit(resource.RLIMIT_AS, (held + (512 << 20), resource.RLIM_INFINITY))\n"
      "sys.argv = sys.argv[1:]\n"
      "sys.path.insert(0, os.path.dirname(sys.argv[0]))\n"
      "runpy.run_path(sys.argv[0], run_name=\"__main__\")\n"
      "' \"$@\"");
  torch::setCommandLinePython(capped);
  auto own = std::make_shared<torch::TorchSession>();
  torch::TorchBackend math{"cpu", "math", own};
  RunResult r = runOnce(math, spec(1, 16384, 16384, 8));
  torch::setCommandLinePython(testPython());
  EXPECT_EQ(r.status, RunStatus::oom) << r.message;
  EXPECT_NE(r.message.find("DefaultCPUAllocator"), std::string::npos) << r.message;
}

TEST_F(TorchBackends, CudaBackendsSayCudaIsNotAvailableInTorch) {
  torch::TorchBackend cudaAuto{"cuda", "auto", session()};
  Availability a = cudaAuto.availability();
  if (a.available) GTEST_SKIP() << "this machine's torch has CUDA";
  EXPECT_EQ(a.reason.rfind("CUDA is not available in torch 2.", 0), 0u) << a.reason;
  EXPECT_EQ(runOnce(cudaAuto, spec(2, 64, 64, 16)).status, RunStatus::unsupported);
}

TEST_F(TorchBackends, WorkerKilledMidRunFailsThePointAndIsRestarted) {
  ASSERT_EQ(runOnce(autoB, spec(2, 64, 64, 16)).status, RunStatus::ok);  // a worker is up
  std::thread killer([] {
    // Kill the worker while the run is busy (the repetitions below take far longer than this).
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    for (pid_t p : workerPids()) ::kill(p, SIGKILL);
  });
  RunResult r = runOnce(mathB, spec(8, 512, 512, 64), nullptr, 100000);
  killer.join();
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("killed by signal 9"), std::string::npos) << r.message;
  RunResult next = runOnce(autoB, spec(2, 64, 64, 16));
  EXPECT_EQ(next.status, RunStatus::ok) << next.message;
}

// A worker (or the probe's spare) killed while idle is not known dead until its keeper has noticed
// and exited, which is asynchronous: the keepers are stopped here so that the window stays open
// for as long as the test needs. The next point asks the worker first and starts another.
TEST_F(TorchBackends, AWorkerKilledWhileIdleIsReplacedBeforeTheNextPoint) {
  ASSERT_EQ(runOnce(autoB, spec(2, 64, 64, 16)).status, RunStatus::ok);
  const std::vector<pid_t> workers = workerPids();
  ASSERT_FALSE(workers.empty());
  std::vector<pid_t> keepers;
  for (pid_t p : workers) {
    keepers.push_back(parentOf(p));
    ASSERT_GT(keepers.back(), 1);
    ASSERT_EQ(::kill(keepers.back(), SIGSTOP), 0);
  }
  for (pid_t p : workers) ASSERT_EQ(::kill(p, SIGKILL), 0);
  for (pid_t p : workers)
    for (int i = 0; i < 200 && processState(p) != 'Z'; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (pid_t p : workers) ASSERT_EQ(processState(p), 'Z') << "worker " << p << " not dead yet";
  // Discarding a dead worker reaps its keeper, which must run again for that: let it, later.
  std::thread resume([keepers] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (pid_t k : keepers) ::kill(k, SIGCONT);
  });
  RunResult r = runOnce(autoB, spec(2, 64, 64, 16));
  resume.join();
  EXPECT_EQ(r.status, RunStatus::ok) << r.message;
}

TEST_F(TorchBackends, CancelStopsTheRunAndKillsTheWorker) {
  ASSERT_EQ(runOnce(autoB, spec(2, 64, 64, 16)).status, RunStatus::ok);
  ASSERT_FALSE(workerPids().empty());
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    cancel = true;
  });
  RunResult r = runOnce(mathB, spec(8, 512, 512, 64), &cancel, 100000);
  canceller.join();
  EXPECT_EQ(r.status, RunStatus::cancelled) << r.message;
  EXPECT_TRUE(workerPids().empty());  // killed, not left computing
  EXPECT_EQ(runOnce(autoB, spec(2, 64, 64, 16)).status, RunStatus::ok);
}

}  // namespace
}  // namespace attnscope

int main(int argc, char** argv) { return attnscope::torchtest::realTorchTestMain(argc, argv); }
