#pragma once
// Where runs were measured: stored once per sweep so runs from different machines compare honestly.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace attnscope {

struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t memory_total = 0;
  bool operator==(const GpuInfo&) const = default;
};

struct Environment {
  std::string host;
  std::string os;
  std::string cpu;
  int cpu_threads = 0;
  int64_t memory_total = 0;
  std::vector<GpuInfo> gpus;
  std::string gpu_note;  // e.g. "GPU backends unavailable: <reason>"; empty when GPUs are usable
  std::string driver_version;
  std::string runtime_version;
  std::string cublas_version;
  std::string cudnn_version;
  std::string cupti_version;
  std::string blas;  // the BLAS the CPU backends use
  std::string app_version;
  std::string git_revision;
  bool operator==(const Environment&) const = default;
};

// Fills the fields a layer above core knows (GPU, CUDA versions, BLAS). Registered at start-up
// by kernels/ so core stays free of CUDA.
using EnvironmentProbe = std::function<void(Environment&)>;
void addEnvironmentProbe(EnvironmentProbe probe);

// Host facts from the OS plus every registered probe.
Environment captureEnvironment();

nlohmann::json toJson(const Environment& e);
Environment environmentFromJson(const nlohmann::json& j);

std::string appVersion();
std::string gitRevision();

}  // namespace attnscope
