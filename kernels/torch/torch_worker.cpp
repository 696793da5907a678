#include "kernels/torch/torch_worker.h"

#include <optional>

#include "core/backend/backend.h"

namespace attnscope::torch {
namespace {

constexpr double kStartTimeout = 180;  // importing torch from a cold disk cache takes a while
constexpr double kPingTimeout = 30;    // an idle worker answers at once; a loaded machine is slow

std::string quoted(const std::string& line) { return "'" + workerText(line, 200) + "'"; }

// A protocol line as JSON; nullopt for anything else (not JSON, not UTF-8, not an object).
std::optional<nlohmann::json> protocolLine(const std::string& line) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
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

TorchHello parseHello(const WorkerReply& j, const std::string& python_command) {
  TorchHello h;
  h.python_version = j.text("python", "", 64);
  h.executable = j.text("executable");
  h.torch_version = j.text("torch", "", 128);
  if (j.has("error")) {
    h.problem = python_command + ": " + j.text("error");
    return h;
  }
  h.usable = true;
  h.torch_cuda = j.text("torch_cuda", "", 64);
  h.torch_cudnn = cudnnVersionText(j.text("torch_cudnn", "", 64));
  h.cuda_available = j.flag("cuda_available", false);
  h.cuda_reason = j.text("cuda_reason");
  for (const auto& d : j.array("cuda_devices", 1024)) {
    const WorkerReply dev = j.item(d, "a CUDA device");
    h.cuda_devices.push_back({static_cast<int>(dev.integer("index", 0, 1023, 0)), dev.text("name", "", 256),
                              dev.text("capability", "", 16), dev.integer("memory", 0, int64_t{1} << 50, 0)});
  }
  h.threads = static_cast<int>(j.integer("threads", 1, 1 << 20, 1));
  h.enable_gqa = j.flag("enable_gqa", false);
  h.causal_lower_right = j.flag("causal_lower_right", false);
  h.sdpa_kernel = j.flag("sdpa_kernel", false);
  h.gloo = j.flag("gloo", false);
  h.nccl = j.flag("nccl", false);
  return h;
}

TorchWorker::TorchWorker(const PythonChoice& python, const std::string& script, const std::atomic<bool>* cancel)
    : python_(python) {
  const double timeout = workerTimeout(kStartTimeout);  // a bad setting refuses before anything starts
  proc_ = std::make_unique<WorkerProcess>(std::vector<std::string>{python.path, script});
  const std::string line = proc_->readLine(timeout, cancel, "starting (importing torch)");
  auto j = protocolLine(line);
  if (!j || !(*j)["type"].is_string() || (*j)["type"] != "hello") {
    kill();
    throw WorkerFailure(python.shown() + " did not start the torch worker: its first line was " + quoted(line) +
                        " instead of the worker's hello");
  }
  const WorkerReply hello(std::move(*j), "in its hello", [this] { kill(); });
  const int64_t protocol = hello.has("protocol") && hello.json()["protocol"].is_number_integer()
                               ? hello.json()["protocol"].get<int64_t>()
                               : -1;
  if (protocol != kProtocolVersion) {
    kill();
    throw WorkerFailure("the torch worker speaks protocol " + std::to_string(protocol) + ", this AttnScope speaks " +
                        std::to_string(kProtocolVersion) + " (a worker script from another AttnScope version?)");
  }
  hello_ = parseHello(hello, python.shown());
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

bool TorchWorker::answers(const std::atomic<bool>* cancel) {
  if (!alive()) return false;
  try {
    return request({{"op", "ping"}}, kPingTimeout, cancel).json().value("ok", false);
  } catch (const WorkerFailure&) {
    return false;
  }
}

WorkerReply TorchWorker::request(nlohmann::json req, double timeout_s, const std::atomic<bool>* cancel) {
  if (!alive()) throw WorkerFailure("the torch worker is not running");
  const int64_t id = next_id_++;
  req["id"] = id;
  const std::string op = req.value("op", "?");
  try {
    proc_->writeLine(req.dump());
    const std::string line = proc_->readLine(timeout_s, cancel, "running '" + op + "'");
    auto j = protocolLine(line);
    if (!j)
      throw WorkerFailure("torch worker protocol error: answering '" + op + "' it printed " + quoted(line) +
                          ", not a JSON line; killed it");
    const auto rid = j->find("id");
    if (rid == j->end() || !rid->is_number_integer() || rid->get<int64_t>() != id || !(*j)["ok"].is_boolean())
      throw WorkerFailure("torch worker protocol error: answering request " + std::to_string(id) + " ('" + op +
                          "') it sent " + quoted(line) + "; killed it");
    return WorkerReply(std::move(*j), "answering '" + op + "'", [this] { kill(); });
  } catch (...) {
    kill();
    throw;
  }
}

}  // namespace attnscope::torch
