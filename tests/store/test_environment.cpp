// Environment capture, probes, JSON round trip and de-duplication in the store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/result/environment.h"
#include "core/store/store.h"
#include "tests/store/store_test_support.h"

namespace attnscope {
namespace {

Environment fullEnvironment() {
  Environment e;
  e.host = "bench-01";
  e.os = "Debian GNU/Linux 12 (bookworm) (Linux 6.1.0 x86_64)";
  e.cpu = "AMD EPYC 7B13";
  e.cpu_threads = 2;
  e.memory_total = 25'000'000'000;
  e.gpus = {GpuInfo{0, "NVIDIA H200", 9, 0, 132, 150'000'000'000}, GpuInfo{1, "NVIDIA L4", 8, 9, 58, 24'000'000'000}};
  e.gpu_note = "";
  e.driver_version = "550.54";
  e.runtime_version = "12.4";
  e.cublas_version = "12.4.5";
  e.cudnn_version = "9.1";
  e.cupti_version = "22";
  e.blas = "OpenBLAS 0.3.21 (pthreads)";
  e.app_version = "0.1.0";
  e.git_revision = "abc1234";
  return e;
}

TEST(Environment, CaptureFillsHostFactsAndRunsProbes) {
  Environment plain = captureEnvironment();
  EXPECT_FALSE(plain.host.empty());
  EXPECT_FALSE(plain.os.empty());
  EXPECT_FALSE(plain.cpu.empty());
  EXPECT_GT(plain.cpu_threads, 0);
  EXPECT_GT(plain.memory_total, 64LL << 20);
  EXPECT_EQ(plain.app_version, appVersion());
  EXPECT_EQ(plain.git_revision, gitRevision());
  EXPECT_FALSE(plain.app_version.empty());
  EXPECT_NE(plain.app_version, "unknown");

  addEnvironmentProbe([](Environment& e) {
    e.gpus.push_back(GpuInfo{0, "Probe GPU", 9, 0, 132, 1});
    e.blas = "probe BLAS";
  });
  Environment probed = captureEnvironment();
  ASSERT_EQ(probed.gpus.size(), 1u);
  EXPECT_EQ(probed.gpus[0].name, "Probe GPU");
  EXPECT_EQ(probed.blas, "probe BLAS");
  EXPECT_EQ(probed.host, plain.host);
}

TEST(Environment, JsonRoundTrip) {
  Environment e = fullEnvironment();
  nlohmann::json j = toJson(e);
  EXPECT_EQ(j["gpus"][1]["cc_minor"], 9);
  EXPECT_EQ(environmentFromJson(j), e);
  EXPECT_EQ(environmentFromJson(nlohmann::json::parse(j.dump())), e);
  EXPECT_EQ(environmentFromJson(nlohmann::json::object()), Environment{});
  EXPECT_THROW(environmentFromJson(nlohmann::json::array()), std::exception);
}

TEST(Environment, StoredOnceAndReadBack) {
  test::TempDir dir;
  std::string path = dir.file("runs.sqlite");
  Environment e = fullEnvironment();
  int64_t first = 0;
  {
    Store store(path);
    first = store.saveEnvironment(e);
    EXPECT_EQ(store.saveEnvironment(e), first);
  }
  Store store(path);
  EXPECT_EQ(store.saveEnvironment(e), first);  // also across connections
  EXPECT_EQ(store.environment(first), e);
  Environment other = e;
  other.driver_version = "555.42";
  int64_t second = store.saveEnvironment(other);
  EXPECT_NE(second, first);
  EXPECT_EQ(store.environment(second), other);
  try {
    store.environment(second + 10);
    ADD_FAILURE() << "read a missing environment";
  } catch (const StoreError& err) {
    EXPECT_EQ(err.kind(), StoreError::Kind::not_found);
  }
}

}  // namespace
}  // namespace attnscope
