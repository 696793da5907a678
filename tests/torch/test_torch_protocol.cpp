// Our handling of torch workers that misbehave, with fake "pythons" (shell scripts) playing the
// worker: they test AttnScope's error handling, not torch. Also a real Python without torch and a
// Python that does not exist. Every failure must stay the point's status, kill the worker, and let
// the next point start a fresh one.
#include <gtest/gtest.h>

#include <thread>

#include "kernels/torch/torch_python.h"
#include "tests/torch/torch_test_support.h"

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
  EXPECT_EQ(starts(name), 2);  // the probe's worker (adopted by the first point), then a fresh one
}

TEST_F(Fixture, ReplyToAnotherRequestIsAProtocolError) {
  torch::setCommandLinePython(fakePython(
      "python-wrong-id", "echo '" + fakeHello() + "'\nwhile read line; do echo '{\"id\":999,\"ok\":true}'; done"));
  RunResult r = runOnce(backend, spec(2, 16, 16, 8));
  EXPECT_EQ(r.status, RunStatus::error);
  EXPECT_NE(r.message.find("answering request 1 ('load') it sent '{\"id\":999,\"ok\":true}'"), std::string::npos)
      << r.message;
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
  EXPECT_EQ(starts(name), 2);
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
