#include "core/torch_dispatch/installed_torch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

namespace attnscope::torch_dispatch {

namespace {

// The probe prints one JSON line; errors (no torch, a broken install) go to stderr, which the
// shell folds into the captured output so the user sees Python's own words.
constexpr const char* kProbe = R"PY(
import json, sys
try:
    import torch
except Exception as e:
    print(json.dumps({"error": "%s: %s" % (type(e).__name__, e)})); sys.exit(0)
out = {"version": torch.__version__, "cuda": torch.version.cuda, "threads": torch.get_num_threads()}
try:
    out["cudnn"] = torch.backends.cudnn.version() if torch.version.cuda else None
except Exception:
    out["cudnn"] = None
try:
    if torch.cuda.is_available():
        out["capability"] = list(torch.cuda.get_device_capability(0))
        out["device"] = torch.cuda.get_device_name(0)
except Exception as e:
    out["device_error"] = str(e)
print(json.dumps(out))
)PY";

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string findPython(const std::string& explicit_path) {
  if (!explicit_path.empty()) return explicit_path;
  if (const char* env = std::getenv("ATTNSCOPE_PYTHON"); env && *env) return env;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/python3";
      if (executable(candidate)) return candidate;
    }
  }
  return "";
}

InstalledTorch probeInstalledTorch(const std::string& python) {
  InstalledTorch r;
  r.python = python;
  if (python.empty()) {
    r.error = "no Python found (give --python PATH or set ATTNSCOPE_PYTHON; python3 is not on PATH)";
    return r;
  }
  const std::string cmd = shellQuote(python) + " -c " + shellQuote(kProbe) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    r.error = python + ": cannot start";
    return r;
  }
  std::string text;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) text.append(buf.data(), n);
  const int status = pclose(pipe);
  // The JSON is the last line; anything before it is a warning torch printed on import.
  const size_t start = text.rfind("\n{");
  const std::string line = start == std::string::npos ? text : text.substr(start + 1);
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) r.error = python + ": not found";
    else r.error = python + ": " + (text.empty() ? "the torch probe printed nothing" : text.substr(text.rfind('\n') + 1));
    return r;
  }
  if (j.contains("error")) {
    r.error = python + ": " + j["error"].get<std::string>();
    return r;
  }
  r.version_text = j.value("version", "");
  r.version = parseTorchVersion(r.version_text);
  if (j.contains("cuda") && j["cuda"].is_string()) {
    const std::string cuda = j["cuda"];
    r.cuda_major = std::atoi(cuda.c_str());
  }
  if (j.contains("cudnn") && j["cudnn"].is_number_integer()) r.cudnn = parseCudnnVersion(std::to_string(j["cudnn"].get<int>()));
  if (j.contains("capability") && j["capability"].is_array() && j["capability"].size() == 2) {
    r.cuda_device = true;
    r.capability = {j["capability"][0].get<int>(), j["capability"][1].get<int>()};
    r.device_name = j.value("device", "");
  }
  r.threads = j.value("threads", 1);
  return r;
}

}  // namespace attnscope::torch_dispatch
