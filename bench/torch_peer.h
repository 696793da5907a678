#pragma once
// bench_cpu's peer: one Python process with PyTorch, kept for the whole bench run, that times
// torch's own CPU SDPA (the flash kernel and the math path) on the shape bench_cpu just ran,
// so both are measured in the same run under the same load. Driven over pipes, one request
// line and one reply line per point; it waits, idle, while our backends run.

#include <optional>
#include <string>

#include "core/spec/workload_spec.h"

namespace attnscope::bench {

struct PeerTiming {
  bool ok = false;
  double median_s = 0, min_s = 0;
  std::string message;  // why not ok (unsupported, out of memory, ...)
};

class TorchPeer {
 public:
  // The first of: `python` (from --python), ATTNSCOPE_PYTHON, python3 on PATH, that imports
  // torch. nullopt with `why` filled when none does.
  static std::optional<TorchPeer> start(const std::string& python, int threads, std::string& why);

  TorchPeer(TorchPeer&& other) noexcept;
  TorchPeer& operator=(TorchPeer&&) = delete;
  ~TorchPeer();

  // e.g. "torch 2.15.0, CPU capability AVX2, 2 threads (/usr/bin/python3)"
  const std::string& description() const { return description_; }

  // backend: "flash" or "math". Inputs uniform in [-1, 1) in the spec's dtype; causal masks
  // map to is_causal (the other mask kinds are not sent). spec.pass = train adds the backward
  // through autograd; spec.kind = layer times the whole layer (F.linear, SDPA, F.linear).
  PeerTiming time(const WorkloadSpec& spec, const std::string& backend, int warmup, int reps);
  // One product on contiguous tensors in dtype, no autograd: op "linear" F.linear(x[m,k], w[n,k],
  // b[n]); "nn" a[m,k] @ b[k,n]; "tn" a[k,m].t() @ b[k,n] (what autograd runs for a linear layer's
  // forward, its input gradient and its weight gradient).
  PeerTiming timeProduct(const std::string& op, DType dtype, int64_t m, int64_t k, int64_t n, int warmup, int reps);

 private:
  TorchPeer() = default;
  bool exchange(const std::string& request, std::string& reply);
  PeerTiming ask(const std::string& request);  // one request, its reply parsed

  int pid_ = -1, to_ = -1, from_ = -1;
  std::string description_, pending_;
};

}  // namespace attnscope::bench
