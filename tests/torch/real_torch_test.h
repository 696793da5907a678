#pragma once
// The gtest side shared by the tests that drive the real torch of ATTNSCOPE_TEST_PYTHON: the
// Python, a fixture with one worker session and the auto/math/flash CPU backends on it, and a
// main that exits 77 (skipped) with a message when no such Python is given.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "kernels/torch/torch_backend.h"
#include "kernels/torch/torch_python.h"

namespace attnscope::torchtest {

inline const char* testPython() { return std::getenv("ATTNSCOPE_TEST_PYTHON"); }

struct RealTorchTest : ::testing::Test {
  static void SetUpTestSuite() { torch::setCommandLinePython(testPython()); }
  static std::shared_ptr<torch::TorchSession> session() {
    static auto s = std::make_shared<torch::TorchSession>();
    return s;
  }
  torch::TorchBackend autoB{"cpu", "auto", session()};
  torch::TorchBackend mathB{"cpu", "math", session()};
  torch::TorchBackend flashB{"cpu", "flash", session()};
};

inline int realTorchTestMain(int argc, char** argv) {
  if (!testPython() || !*testPython()) {
    std::printf("skipped: ATTNSCOPE_TEST_PYTHON is not set (bash scripts/torch-venv.sh prints a Python with torch)\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace attnscope::torchtest
