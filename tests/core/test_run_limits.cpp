// The run engine's limits: a wrong output is status wrong; any allocation failure is status oom;
// the memory guard runs before inputs exist and counts them; the available memory honours
// rlimits; the trace is bounded per run; points that do not run keep their prediction; sweep
// grids are bounded before they are expanded.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <new>

#include <nlohmann/json.hpp>

#include "core/check/reference.h"
#include "core/engine/run_engine.h"
#include "core/spec/sweep_spec.h"

using namespace attnscope;

namespace {

enum class Output { exact, off, nan };

// Computes with the float64 reference (or spoils it on purpose); allocates a scratch buffer per
// pass, as real backends do, so the trace grows with repetitions unless the engine bounds it.
class FaultyBackend : public Backend {
 public:
  Output output = Output::exact;
  bool throwBadAlloc = false;
  bool unsupported = false;
  int64_t available = -1;
  std::string id() const override { return "test.faulty"; }
  std::string device() const override { return "cpu"; }
  std::string description() const override { return "reference with injected faults (tests)"; }
  Availability availability() const override { return {}; }
  Support support(const WorkloadSpec&) const override {
    Support r;
    if (unsupported) r.reasons.push_back("device unavailable (test)");
    return r;
  }
  MemoryPlan plan(const WorkloadSpec& s) const override {
    MemoryPlan p;
    int st = p.addStep("all");
    p.add("io", s.ioBytes(), st, st, BufferRole::input);
    p.add("scratch", 64, st, st, BufferRole::workspace);
    return p;
  }
  int64_t memoryAvailable() const override { return available; }
  std::unique_ptr<TrackingAllocator> makeAllocator() const override { return std::make_unique<HostAllocator>(); }
  std::unique_ptr<Execution> prepare(const WorkloadSpec& s, const HostInputs& in, RunContext& ctx) override {
    if (throwBadAlloc) throw std::bad_alloc();
    struct Exec : Execution {
      WorkloadSpec s;
      const HostInputs* in = nullptr;
      RunContext* ctx = nullptr;
      Output mode = Output::exact;
      Buffer<uint8_t> io;
      double run() override {
        PhaseScope phase(*ctx, "compute");
        Buffer<uint8_t> scratch(ctx->allocator(), 64, "scratch");
        return 1e-3;
      }
      void output(std::vector<float>& out) override {
        std::vector<int64_t> rows(static_cast<size_t>(s.batch * s.heads * s.seq_q));
        for (size_t r = 0; r < rows.size(); ++r) rows[r] = static_cast<int64_t>(r);
        std::vector<double> ref;
        referenceRows(s, *in, rows, ref);
        out.assign(ref.begin(), ref.end());
        if (mode == Output::off) out[1] += 0.01f;
        if (mode == Output::nan) out[2] = std::numeric_limits<float>::quiet_NaN();
      }
    };
    auto e = std::make_unique<Exec>();
    e->s = s;
    e->in = &in;
    e->ctx = &ctx;
    e->mode = output;
    e->io = Buffer<uint8_t>(ctx.allocator(), s.ioBytes(), "io");
    return e;
  }
};

WorkloadSpec small() {
  WorkloadSpec s;
  s.heads = 2;
  s.seq_q = 16;
  s.head_dim = 8;
  return s;
}

}  // namespace

TEST(RunLimits, WrongOrNanOutputIsStatusWrong) {
  FaultyBackend b;
  RunOptions o;
  EXPECT_EQ(runPoint(b, small(), o).status, RunStatus::ok);
  b.output = Output::off;
  RunResult r = runPoint(b, small(), o);
  EXPECT_EQ(r.status, RunStatus::wrong);
  EXPECT_NE(r.message.find("accuracy check failed"), std::string::npos) << r.message;
  EXPECT_EQ(toString(r.status), "wrong");
  EXPECT_EQ(parseRunStatus("wrong"), RunStatus::wrong);
  b.output = Output::nan;
  r = runPoint(b, small(), o);
  EXPECT_EQ(r.status, RunStatus::wrong);
  EXPECT_NE(r.message.find("nan"), std::string::npos) << r.message;
  // The failure survives a JSON round trip (JSON has no Inf).
  RunResult back = runResultFromJson(toJson(r));
  EXPECT_EQ(back.status, RunStatus::wrong);
  EXPECT_FALSE(back.accuracy.passed());
}

TEST(RunLimits, AllocationFailureInsideAPointIsOom) {
  FaultyBackend b;
  b.throwBadAlloc = true;
  RunResult r = runPoint(b, small(), RunOptions{});
  EXPECT_EQ(r.status, RunStatus::oom);
  EXPECT_NE(r.message.find("out of host memory"), std::string::npos) << r.message;
}

TEST(RunLimits, MemoryGuardCountsInputsAndRunsBeforeAnyAllocation) {
  FaultyBackend b;
  const WorkloadSpec s = small();
  // Room for the plan but not for the generated inputs and output copy beside it.
  b.available = b.plan(s).peakBytes() + 16;
  RunResult r = runPoint(b, s, RunOptions{});
  EXPECT_EQ(r.status, RunStatus::oom);
  EXPECT_NE(r.message.find("inputs and output copy included"), std::string::npos) << r.message;
  EXPECT_EQ(r.memory.measured_peak, -1);  // nothing was allocated
  // A huge point is refused at once, from arithmetic alone.
  WorkloadSpec huge;
  huge.heads = int64_t{1} << 40;
  huge.seq_q = 1;
  b.available = int64_t{1} << 30;
  r = preflight(b, huge, RunOptions{});
  EXPECT_EQ(r.status, RunStatus::oom);
  EXPECT_GT(r.memory.predicted_peak, int64_t{1} << 40);
}

TEST(RunLimits, AvailableMemoryHonoursRlimitAs) {
  // In a child, so the limit does not bind the test itself.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit rl{};
    getrlimit(RLIMIT_AS, &rl);
    std::ifstream status("/proc/self/status");
    std::string line;
    int64_t vmKb = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vmKb = std::stoll(line.substr(7));
    const int64_t limit = vmKb * 1024 + (int64_t{256} << 20);
    rl.rlim_cur = static_cast<rlim_t>(limit);
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(3);
    const int64_t avail = hostMemoryAvailable();
    _exit(avail >= 0 && avail <= (int64_t{256} << 20) + (int64_t{16} << 20) ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0) << "hostMemoryAvailable() ignores RLIMIT_AS";
}

TEST(RunLimits, TraceKeepsTheFirstPassesAndCountsTheRest) {
  FaultyBackend b;
  RunOptions o;
  o.warmup = 0;
  o.reps = 200;
  RunResult r = runPoint(b, small(), o);
  ASSERT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(r.timing.samples_s.size(), 200u);
  // io alloc/free + per traced pass: a phase and the scratch alloc and free.
  EXPECT_EQ(r.trace.events.size(), static_cast<size_t>(2 + 3 * kTracedPasses));
  EXPECT_NE(r.message.find("first 8 of 200 forward passes"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(std::to_string(3 * (200 - kTracedPasses)) + " events"), std::string::npos) << r.message;
  o.reps = kMaxReps + 1;
  EXPECT_EQ(runPoint(b, small(), o).status, RunStatus::error);
}

TEST(RunLimits, PointsThatDoNotRunKeepTheirPrediction) {
  FaultyBackend b;
  b.unsupported = true;
  RunResult r = runPoint(b, small(), RunOptions{});
  EXPECT_EQ(r.status, RunStatus::unsupported);
  EXPECT_EQ(r.memory.predicted_peak, b.plan(small()).peakBytes());
}

TEST(RunLimits, SweepGridsAreBoundedBeforeExpansion) {
  SweepSpec sw;
  sw.backends = {"a"};
  std::vector<std::string> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(std::to_string(i));
  sw.axes = {{"heads", hundred}, {"seq", hundred}, {"batch", hundred}, {"seed", hundred}};  // 10^8 points
  std::vector<SpecError> errs;
  EXPECT_TRUE(sw.expand(&errs).empty());
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("at most " + std::to_string(kMaxSweepPoints)), std::string::npos) << errs[0].message;
  sw.axes = {{"heads", {"2", "4", "2"}}};
  errs.clear();
  sw.expand(&errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("given twice"), std::string::npos);
  sw.axes = {{"heads", {"2", ""}}};
  errs.clear();
  sw.expand(&errs);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].message.find("empty"), std::string::npos);
}
