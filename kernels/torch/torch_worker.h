#pragma once
// The AttnScope side of the torch worker protocol (docs/TORCH_WORKER.md): start the worker,
// read its hello, send one JSON request per line and read the one response with the same id.
// Anything else on the worker's stdout is a protocol error: the worker is killed and the point
// fails with a message that quotes what it said (as valid, bounded text: worker_reply.h).

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/torch/torch_python.h"
#include "kernels/torch/worker_process.h"
#include "kernels/torch/worker_reply.h"

namespace attnscope::torch {

inline constexpr int kProtocolVersion = 1;

// A CUDA device as torch reports it in the hello (not the explainer's TorchDevice, which is cpu or cuda).
struct TorchCudaDevice {
  int index = 0;
  std::string name;
  std::string capability;  // "9.0"
  int64_t memory = 0;
};

// What the worker says about itself when it starts.
struct TorchHello {
  bool usable = false;   // torch imported, new enough
  std::string problem;   // why not, e.g. "python3: No module named 'torch'"
  std::string python_version, executable;
  std::string torch_version, torch_cuda, torch_cudnn;
  bool cuda_available = false;
  std::string cuda_reason;  // torch's own words when CUDA is not available
  std::vector<TorchCudaDevice> cuda_devices;
  int threads = 0;
  bool enable_gqa = false, causal_lower_right = false, sdpa_kernel = false;
  bool gloo = false, nccl = false;  // torch.distributed's backends, for tp > 1
};
// Throws WorkerFailure (through `j`) when a field has the wrong type or an impossible value.
TorchHello parseHello(const WorkerReply& j, const std::string& python_command);
// cuDNN's integer version as torch reports it (92600, 8902) as text ("9.26.0", "8.9.2").
std::string cudnnVersionText(const std::string& raw);

class TorchWorker {
 public:
  // Starts `python script` and reads the hello. Throws WorkerFailure, or Cancelled.
  TorchWorker(const PythonChoice& python, const std::string& script, const std::atomic<bool>* cancel);
  ~TorchWorker();

  const TorchHello& hello() const { return hello_; }
  const PythonChoice& python() const { return python_; }
  bool alive() const { return proc_ && proc_->running() && !broken_; }
  // alive() and answering: one round trip. A worker killed while idle is not yet known dead to
  // alive() until its keeper has noticed and exited (asynchronous; seen on a loaded CI machine,
  // where a spare killed just before its use failed the next point). Kills it when it does not
  // answer; throws Cancelled on cancel.
  bool answers(const std::atomic<bool>* cancel);

  // Sends `request` (an "op" and its fields; the id is added) and returns the response, whose
  // "ok" says whether torch succeeded. Throws WorkerFailure (the worker is dead afterwards) on a
  // timeout, a crash or a line that is not a response to this request; Cancelled on cancel.
  // Reading a field of the response that is wrong also kills the worker (WorkerReply).
  WorkerReply request(nlohmann::json request, double timeout_s, const std::atomic<bool>* cancel);

  void kill();

 private:
  PythonChoice python_;
  std::unique_ptr<WorkerProcess> proc_;
  TorchHello hello_;
  int64_t next_id_ = 1;
  bool broken_ = false;
};

}  // namespace attnscope::torch
