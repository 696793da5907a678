#include "kernels/torch/torch_worker.h"

#include "core/backend.h"

namespace attnscope::torch {
namespace {

constexpr double kStartTimeout = 180;  // importing torch from a cold disk cache takes a while

std::string quoted(const std::string& line) {
  std::string s = line.size() > 200 ? line.substr(0, 200) + "..." : line;
  return "'" + s + "'";
}

}  // namespace

std::string cudnnVersionText(const std::string& raw) {
  if (raw.empty()) return {};
  try {
    const long v = std::stol(raw);
    // cuDNN 9 encodes major*10000 + minor*100 + patch, cuDNN 8 major*1000 + minor*100 + patch.
    if (v >= 90000) return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    return std::to_string(v / 1000) + "." + std::to_string(v / 100 % 10) + "." + std::to_string(v % 100);
  } catch (const std::exception&) {
    return raw;
  }
}

TorchHello parseHello(const nlohmann::json& j, const std::string& python_command) {
  TorchHello h;
  h.python_version = j.value("python", "");
  h.executable = j.value("executable", "");
  h.torch_version = j.value("torch", "");
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    h.problem = python_command + ": " + e->get<std::string>();
    return h;
  }
  h.usable = true;
  h.torch_cuda = j.value("torch_cuda", "");
  h.torch_cudnn = cudnnVersionText(j.value("torch_cudnn", ""));
  h.cuda_available = j.value("cuda_available", false);
  h.cuda_reason = j.value("cuda_reason", "");
  for (const auto& d : j.value("cuda_devices", nlohmann::json::array()))
    h.cuda_devices.push_back({d.value("index", 0), d.value("name", ""), d.value("capability", ""), d.value("memory", int64_t{0})});
  h.threads = j.value("threads", 0);
  h.enable_gqa = j.value("enable_gqa", false);
  h.causal_lower_right = j.value("causal_lower_right", false);
  h.sdpa_kernel = j.value("sdpa_kernel", false);
  return h;
}

TorchWorker::TorchWorker(const PythonChoice& python, const std::string& script, const std::atomic<bool>* cancel)
    : python_(python) {
  proc_ = std::make_unique<WorkerProcess>(std::vector<std::string>{python.path, script});
  const std::string line = proc_->readLine(workerTimeout(kStartTimeout), cancel, "starting (importing torch)");
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("type", "") != "hello") {
    kill();
    throw WorkerFailure(python.command + " did not start the torch worker: its first line was " + quoted(line) +
                        " instead of the worker's hello");
  }
  const int protocol = j.value("protocol", -1);
  if (protocol != kProtocolVersion) {
    kill();
    throw WorkerFailure("the torch worker speaks protocol " + std::to_string(protocol) + ", this AttnScope speaks " +
                        std::to_string(kProtocolVersion) + " (a worker script from another AttnScope version?)");
  }
  hello_ = parseHello(j, python.command);
  if (!hello_.usable) kill();  // it exits on its own after saying why; nothing more to ask
}

TorchWorker::~TorchWorker() {
  if (alive()) {
    try {
      proc_->writeLine(R"({"id":0,"op":"quit"})");
      proc_->readLine(2.0, nullptr, "quitting");
    } catch (const std::exception&) {
    }
  }
  kill();
}

void TorchWorker::kill() {
  broken_ = true;
  if (proc_) proc_->kill();
}

nlohmann::json TorchWorker::request(nlohmann::json req, double timeout_s, const std::atomic<bool>* cancel) {
  if (!alive()) throw WorkerFailure("the torch worker is not running");
  const int64_t id = next_id_++;
  req["id"] = id;
  const std::string op = req.value("op", "?");
  try {
    proc_->writeLine(req.dump());
    const std::string line = proc_->readLine(timeout_s, cancel, "running '" + op + "'");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw WorkerFailure("torch worker protocol error: answering '" + op + "' it printed " + quoted(line) +
                          ", not a JSON line; killed it");
    if (j.value("id", int64_t{-1}) != id || !j.contains("ok"))
      throw WorkerFailure("torch worker protocol error: answering request " + std::to_string(id) + " ('" + op +
                          "') it sent " + quoted(line) + "; killed it");
    return j;
  } catch (...) {
    kill();
    throw;
  }
}

}  // namespace attnscope::torch
