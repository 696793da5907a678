// Our handling of torch workers that misbehave, with fake "pythons" (shell scripts) playing the
// worker: they test AttnScope's error handling, not torch. Also a real Python without torch and a
// Python that does not exist. Every failure must stay the point's status, kill the worker, and let
// the next point start a fresh one.
#include <gtest/gtest.h>

#include <csignal>
#include <thread>

#include "core/base/utf8_text.h"
#include "kernels/torch/torch_python.h"
#include "tests/torch/torch_test_support.h"
#include "tests/support/sanitizers.h"


using attnscope::test::kAddressSanitized;

namespace attnscope {
namespace {

using namespace torchtest;

struct Fixture : ::testing::Test {
  void TearDown() override {
    ::unsetenv("ATTNSCOPE_TORCH_TIMEOUT");
    torch::setCommandLinePython("");
    torch::TorchProbe::instance().invalidate();
  }
  std::shared_ptr<torch::TorchSession> session = std::make_shared<torch::TorchSession>();
  torch::TorchBackend backend{"cpu", "auto", session};
};

std::string startLog(const std::string& name) { return std::string(ATTNSCOPE_TORCH_TEST_DIR) + "/" + name + ".starts"; }
int starts(const std::string& name) {
  std::ifstream in(startLog(name));
  return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

// One run without the accuracy check: the fake worker's output is zeros.
RunResult runUnchecked(Backend& b, const WorkloadSpec& s) {
  RunOptions opt;
  opt.warmup = 0;
  opt.reps = 1;
  opt.check = CheckMode::off;
  return runPoint(b, s, opt);
}

// This process's peak resident memory since the last resetPeakMemory(), in bytes.
int64_t peakMemory() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}
void resetPeakMemory() { std::ofstream("/proc/self/clear_refs") << "5"; }

TEST_F(Fixture, NoSuchPython) {
  torch::setCommandLinePython("/nonexistent/bin/python");
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_EQ(a.reason, "/nonexistent/bin/python (from --python): no such executable file");
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::unsupported);
  EXPECT_EQ(r.message, a.reason);
}

TEST_F(Fixture, PythonWithoutTorch) {
  // A real Python that cannot see any site-packages: -I (isolated) -S (no site).
  torch::setCommandLinePython(fakePython("python-without-torch", "exec python3 -I -S \"$@\""));
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("python-without-torch: No module named 'torch'"), std::string::npos) << a.reason;
  EXPECT_EQ(runOnce(backend, spec(2, 16, 16, 8)).status, RunStatus::unsupported);
  EXPECT_TRUE(workerPids("python-without-torch").empty());
}

TEST_F(Fixture, GarbageInsteadOfHello) {
  torch::setCommandLinePython(fakePython("python-garbage-hello", "echo 'Welcome to NotPython 0.1'; sleep 60"));
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("did not start the torch worker: its first line was 'Welcome to NotPython 0.1'"),
            std::string::npos)
      << a.reason;
  EXPECT_TRUE(workerPids("python-garbage-hello").empty());  // killed, not left sleeping
}

TEST_F(Fixture, OtherProtocolVersion) {
  torch::setCommandLinePython(
      fakePython("python-protocol-99", "echo '{\"type\":\"hello\",\"protocol\":99}'; sleep 60"));
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("speaks protocol 99, this AttnScope speaks 1"), std::string::npos) << a.reason;
}

TEST_F(Fixture, GarbageReplyFailsThePointAndTheNextStartsAFreshWorker) {
  const std::string name = "python-garbage-reply";
  std::filesystem::remove(startLog(name));
  torch::setCommandLinePython(fakePython(name, "echo start >> '" + startLog(name) + "'\necho '" + fakeHello() +
                                                   "'\nwhile read line; do echo 'PANIC: not json at all'; done"));
  ASSERT_TRUE(backend.availability().available) << backend.availability().reason;
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("torch worker protocol error: answering 'load' it printed 'PANIC: not json at all', not a "
                           "JSON line; killed it"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(workerPids(name).empty());
  RunResult again = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(again.status, RunStatus::error);
  // The probe's worker, asked before the first point is given to it (its garbage answer discards it),
  // a fresh one for the first point, another for the second.
  EXPECT_EQ(starts(name), 3);
}

TEST_F(Fixture, ReplyToAnotherRequestIsAProtocolError) {
  torch::setCommandLinePython(fakePython(
      "python-wrong-id", "echo '" + fakeHello() + "'\nwhile read line; do echo '{\"id\":999,\"ok\":true}'; done"));
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("answering request 1 ('load') it sent '{\"id\":999,\"ok\":true}'"), std::string::npos)
      << r.message;
}

TEST_F(Fixture, ABadTimeoutSettingIsRefusedNamingTheVariable) {
  torch::setCommandLinePython(fakePython("python-never-asked", "echo '" + fakeHello() + "'; sleep 60"));
  for (const char* v : {"0", "-1", "abc", "inf", "nan", "1e100", "86401", " 5", "0x10"}) {
    ::setenv("ATTNSCOPE_TORCH_TIMEOUT", v, 1);
    EXPECT_EQ(torch::torchTimeoutProblem(),
              "ATTNSCOPE_TORCH_TIMEOUT='" + std::string(v) +
                  "': give the seconds to wait for the torch worker, a number greater than 0 and at most 86400 (e.g. "
                  "600), or unset it for the defaults (180 s to start, 600 s a request)")
        << v;
    EXPECT_THROW(torch::workerTimeout(600), std::invalid_argument) << v;
    // The window has no exit code: its torch backends say why they cannot start.
    torch::TorchProbe::instance().invalidate();
    Availability a = backend.availability();
    EXPECT_FALSE(a.available) << v;
    EXPECT_NE(a.reason.find("ATTNSCOPE_TORCH_TIMEOUT='"), std::string::npos) << a.reason;
  }
  for (const char* v : {"2", "0.5", "86400", "600.0"}) {
    ::setenv("ATTNSCOPE_TORCH_TIMEOUT", v, 1);
    EXPECT_EQ(torch::torchTimeoutProblem(), "") << v;
    EXPECT_EQ(torch::workerTimeout(600), std::stod(v));
  }
}

TEST_F(Fixture, HungWorkerIsKilledAfterTheTimeout) {
  ::setenv("ATTNSCOPE_TORCH_TIMEOUT", "2", 1);
  const std::string name = "python-hangs";
  torch::setCommandLinePython(fakePython(name, "echo '" + fakeHello() + "'\nread line\nsleep 600"));
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("did not answer within 2 s while running 'load'; killed it"), std::string::npos) << r.message;
  EXPECT_TRUE(workerPids(name).empty());
}

TEST_F(Fixture, ALineBeyondTheLimitIsRefusedBeforeItIsHeld) {
  // A worker printing 300 MB on one line: we stop reading at kMaxLineBytes and kill it, so the
  // line never sits in our memory (it used to be stored and printed whole).
  torch::setCommandLinePython(fakeWorker("python-huge-line", "huge_line"));
  resetPeakMemory();
  const int64_t before = peakMemory();
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("sent a line longer than 32.0 MiB while running 'finish'"), std::string::npos) << r.message;
  // Under ASan freed blocks sit in its quarantine (and shadow memory grows with them), so the
  // resident peak says little about what was held (seen at 219 MiB on a loaded machine); the
  // plain stages hold the bound.
  if (!kAddressSanitized) {
    EXPECT_LT(peakMemory() - before, int64_t{160} << 20) << "the line was held";
  }
  EXPECT_TRUE(workerPids("python-huge-line").empty());
}

TEST_F(Fixture, MoreEventsThanAskedForFailThePoint) {
  torch::setCommandLinePython(fakeWorker("python-many-events", "many_events"));
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("answering 'finish': field 'events' holds 20001 items, more than the 20000 allowed"),
            std::string::npos)
      << r.message.substr(0, 300);
  EXPECT_TRUE(workerPids("python-many-events").empty());
}

TEST_F(Fixture, WarningsAreCutWithANote) {
  // Torch's warnings are words for a person: the first 20, each at most 4 KiB, and a note.
  torch::setCommandLinePython(fakeWorker("python-many-warnings", "many_warnings"));
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::ok) << r.message.substr(0, 300);
  EXPECT_NE(r.message.find("... [cut: 1000000 bytes in all]"), std::string::npos);
  EXPECT_NE(r.message.find("torch: ... and 81 more left out"), std::string::npos) << r.message.substr(r.message.size() - 300);
  EXPECT_LT(r.message.size(), size_t{20 * 4096 + 2048});
}

TEST_F(Fixture, AnImpossibleValueIsAnErrorNamingTheField) {
  torch::setCommandLinePython(fakeWorker("python-negative-seconds", "negative_seconds"));
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("answering 'run': field 'seconds' is -1.0, not a number greater than 0"), std::string::npos)
      << r.message;
  EXPECT_TRUE(workerPids("python-negative-seconds").empty());
  // A wrong type in the hello: the backend is unavailable with the field named, no JSON exception.
  torch::TorchProbe::instance().invalidate();
  torch::setCommandLinePython(fakeWorker("python-string-threads", "string_threads"));
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("in its hello: field 'threads' is \"many\", not an integer from 1 to"), std::string::npos)
      << a.reason;
}

TEST_F(Fixture, NonUtf8FromTheWorkerBecomesEscapedText) {
  // Bytes that are not UTF-8 would make every JSON dump of the result throw (type_error 316).
  torch::setCommandLinePython(fakeWorker("python-bad-utf8-reply", "bad_utf8_reply"));
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("answering 'finish' it printed '{\"id\":"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find(",\"ok\":true,\"peak_bytes\":4096,\"ran\":\"ma\\xffth\""),
            std::string::npos)
      << r.message;
  EXPECT_EQ(validUtf8(r.message), r.message);
  EXPECT_NO_THROW(toJson(r).dump());
  torch::TorchProbe::instance().invalidate();
  torch::setCommandLinePython(fakeWorker("python-bad-utf8-hello", "bad_utf8_hello"));
  Availability a = backend.availability();
  EXPECT_FALSE(a.available);
  EXPECT_NE(a.reason.find("\"executable\":\"/fake/\\xff\\xfe/python\""), std::string::npos) << a.reason;
  EXPECT_EQ(validUtf8(a.reason), a.reason);
}

TEST_F(Fixture, AWorkerThatDiesHasNoMeasuredPeak) {
  // Not our empty allocator's 0 B (which showed as "torch peak 0 B" and a negative overhead).
  torch::setCommandLinePython(fakeWorker("python-dies-in-run", "die_in_run"));
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("exited (exited with status 3) while running 'run'"), std::string::npos) << r.message;
  EXPECT_EQ(r.memory.measured_peak, -1);
  EXPECT_EQ(r.memory.overhead(), -1);
}

TEST_F(Fixture, ASpareWorkerThatDiedIdleIsNotAdopted) {
  // The probe keeps its worker for the first run; if that one was killed meanwhile (the OOM
  // killer, a user), the run starts a fresh worker instead of failing on the dead one.
  const std::string log = startLog("python-spare");
  std::filesystem::remove(log);
  torch::setCommandLinePython(fakePython("python-spare", "FAKE_LOG='" + log + "' FAKE_NAME=spare exec '"
                                                         ATTNSCOPE_TEST_SYSTEM_PYTHON "' '" ATTNSCOPE_FAKE_TORCH_WORKER
                                                         "' record \"$@\""));
  ASSERT_TRUE(backend.availability().available);
  const std::vector<pid_t> spare = workerPids();  // exec replaced the script: its name is gone
  ASSERT_EQ(spare.size(), 1u);
  ::kill(spare[0], SIGKILL);
  for (int i = 0; i < 100 && !workerPids().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // and its keeper has ended like it
  RunResult r = runUnchecked(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::ok) << r.message;
  EXPECT_EQ(starts("python-spare"), 2);
}

TEST_F(Fixture, TheKeeperHoldsNoneOfOurMemory) {
  // The keeper lives as long as the worker: as a fork of us it would keep what we had mapped when
  // it started (here 256 MiB we free at once) resident for all that time.
  auto held = std::make_unique<std::vector<char>>(size_t{256} << 20, 'x');
  torch::setCommandLinePython(fakeWorker("python-keeper-memory", "ok"));
  ASSERT_TRUE(backend.availability().available);
  held.reset();
  // The keeper is the worker's parent.
  auto field = [](pid_t pid, const std::string& name) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind(name + ":", 0) == 0) return std::stoll(line.substr(name.size() + 1));
    return -1LL;
  };
  const std::vector<pid_t> worker = workerPids();
  ASSERT_EQ(worker.size(), 1u);
  const int64_t keeper_rss = field(static_cast<pid_t>(field(worker[0], "PPid")), "VmRSS") * 1024;
  ASSERT_GE(keeper_rss, 0) << "no keeper found";
  EXPECT_LT(keeper_rss, int64_t{32} << 20);
}

TEST_F(Fixture, CrashKeepsTheWorkersLastWords) {
  const std::string name = "python-crashes";
  std::filesystem::remove(startLog(name));
  torch::setCommandLinePython(fakePython(name, "echo start >> '" + startLog(name) + "'\necho '" + fakeHello() +
                                                   "'\nread line\necho 'Fatal Python error: Segmentation fault' >&2\n"
                                                   "kill -SEGV $$"));
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("exited (killed by signal 11) while running 'load': Fatal Python error: Segmentation fault"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(runOnce(backend, spec(2, 16, 16, 8)).status, RunStatus::error);
  EXPECT_EQ(starts(name), 3);  // the probe's (it crashes on the question whether it answers), then one per point
}

TEST_F(Fixture, CancelKillsABusyWorker) {
  const std::string name = "python-busy";
  torch::setCommandLinePython(fakePython(name, "echo '" + fakeHello() + "'\nread line\nsleep 600"));
  ASSERT_TRUE(backend.availability().available);
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    // Cancel once the worker is busy with the load request.
    for (int i = 0; i < 200 && workerPids(name).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel = true;
  });
  RunResult r = runOnce(backend, spec(2, 16, 16, 8), &cancel);
  canceller.join();
  EXPECT_EQ(r.status, RunStatus::cancelled) << r.message;
  EXPECT_TRUE(workerPids(name).empty());
}

}  // namespace
}  // namespace attnscope
