#include "core/result/environment.h"

#include "core/base/format.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

namespace attnscope {
namespace {

std::mutex& probeMutex() {
  static std::mutex m;
  return m;
}

std::vector<EnvironmentProbe>& probes() {
  static std::vector<EnvironmentProbe> list;
  return list;
}

// The value of the first "key<sep>value" line of a file whose key matches, or "".
std::string fileField(const char* file, std::string_view key, char sep) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    size_t pos = line.find(sep);
    if (pos == std::string::npos || trimmed(line.substr(0, pos)) != key) continue;
    std::string value = trimmed(line.substr(pos + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    return value;
  }
  return {};
}

std::string hostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string osDescription() {
  std::string pretty = fileField("/etc/os-release", "PRETTY_NAME", '=');
  struct utsname u {};
  std::string kernel;
  if (uname(&u) == 0) kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
  if (pretty.empty()) return kernel.empty() ? "unknown" : kernel;
  return kernel.empty() ? pretty : pretty + " (" + kernel + ")";
}

std::string cpuModel() {
  std::string model = fileField("/proc/cpuinfo", "model name", ':');
  if (model.empty()) model = fileField("/proc/cpuinfo", "Model", ':');  // arm64
  if (model.empty()) {
    struct utsname u {};
    if (uname(&u) == 0) model = u.machine;
  }
  return model.empty() ? "unknown" : model;
}

int64_t memoryTotal() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

}  // namespace

void addEnvironmentProbe(EnvironmentProbe probe) {
  std::lock_guard lock(probeMutex());
  probes().push_back(std::move(probe));
}

Environment captureEnvironment() {
  Environment e;
  e.host = hostName();
  e.os = osDescription();
  e.cpu = cpuModel();
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  e.cpu_threads = online > 0 ? static_cast<int>(online) : static_cast<int>(std::thread::hardware_concurrency());
  e.memory_total = memoryTotal();
  e.app_version = appVersion();
  e.git_revision = gitRevision();
  std::vector<EnvironmentProbe> list;
  {
    std::lock_guard lock(probeMutex());
    list = probes();
  }
  // Outside the lock: a probe may be slow (driver initialisation) or register another probe.
  for (const auto& probe : list) probe(e);
  return e;
}

nlohmann::json toJson(const Environment& e) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& g : e.gpus)
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"cc_major", g.cc_major},
                    {"cc_minor", g.cc_minor},
                    {"sm_count", g.sm_count},
                    {"memory_total", g.memory_total}});
  return {{"host", e.host},
          {"os", e.os},
          {"cpu", e.cpu},
          {"cpu_threads", e.cpu_threads},
          {"memory_total", e.memory_total},
          {"gpus", gpus},
          {"gpu_note", e.gpu_note},
          {"driver_version", e.driver_version},
          {"runtime_version", e.runtime_version},
          {"cublas_version", e.cublas_version},
          {"cudnn_version", e.cudnn_version},
          {"cupti_version", e.cupti_version},
          {"blas", e.blas},
          {"app_version", e.app_version},
          {"git_revision", e.git_revision}};
}

Environment environmentFromJson(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("environment: expected a JSON object");
  Environment e;
  e.host = j.value("host", "");
  e.os = j.value("os", "");
  e.cpu = j.value("cpu", "");
  e.cpu_threads = j.value("cpu_threads", 0);
  e.memory_total = j.value("memory_total", int64_t{0});
  if (auto g = j.find("gpus"); g != j.end() && g->is_array()) {
    for (const auto& x : *g) {
      GpuInfo info;
      info.index = x.value("index", 0);
      info.name = x.value("name", "");
      info.cc_major = x.value("cc_major", 0);
      info.cc_minor = x.value("cc_minor", 0);
      info.sm_count = x.value("sm_count", 0);
      info.memory_total = x.value("memory_total", int64_t{0});
      e.gpus.push_back(std::move(info));
    }
  }
  e.gpu_note = j.value("gpu_note", "");
  e.driver_version = j.value("driver_version", "");
  e.runtime_version = j.value("runtime_version", "");
  e.cublas_version = j.value("cublas_version", "");
  e.cudnn_version = j.value("cudnn_version", "");
  e.cupti_version = j.value("cupti_version", "");
  e.blas = j.value("blas", "");
  e.app_version = j.value("app_version", "");
  e.git_revision = j.value("git_revision", "");
  return e;
}

std::string appVersion() {
#ifdef ATTNSCOPE_VERSION
  return ATTNSCOPE_VERSION;
#else
  return "unknown";
#endif
}

std::string gitRevision() {
#ifdef ATTNSCOPE_GIT_REVISION
  return ATTNSCOPE_GIT_REVISION;
#else
  return "unknown";
#endif
}

}  // namespace attnscope
