#include "bench/torch_peer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

namespace attnscope::bench {
namespace {

// Reads one request per line: dtype batch heads kv_heads seq_q seq_kv head_dim causal scale
// backend warmup reps. Answers "ok median min" or "error <one line>".
constexpr const char* kScript = R"PY(
import sys, time, statistics
try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import sdpa_kernel, SDPBackend
except Exception as e:
    print("error cannot import torch: %s" % str(e).splitlines()[0], flush=True)
    sys.exit(1)
torch.set_num_threads(int(sys.argv[1]))
print("ready torch %s, CPU capability %s, %d threads" % (torch.__version__,
      torch.backends.cpu.get_cpu_capability(), torch.get_num_threads()), flush=True)
dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
backends = {"flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}
for line in sys.stdin:
    f = line.split()
    try:
        dt = dtypes[f[0]]
        b, h, hkv, lq, lkv, d = (int(x) for x in f[1:7])
        causal, scale, backend, warmup, reps = f[7] == "1", float(f[8]), f[9], int(f[10]), int(f[11])
        g = torch.Generator().manual_seed(1)
        q = (torch.rand(b, h, lq, d, generator=g) * 2 - 1).to(dt)
        k = (torch.rand(b, hkv, lkv, d, generator=g) * 2 - 1).to(dt)
        v = (torch.rand(b, hkv, lkv, d, generator=g) * 2 - 1).to(dt)
        run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                     enable_gqa=hkv != h)
        with sdpa_kernel(backends[backend]):
            for _ in range(warmup):
                run()
            times = []
            for _ in range(reps):
                t0 = time.perf_counter()
                run()
                times.append(time.perf_counter() - t0)
        print("ok %.9f %.9f" % (statistics.median(times), min(times)), flush=True)
    except Exception as e:
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print("error %s" % msg[:200], flush=True)
)PY";

}  // namespace

std::optional<TorchPeer> TorchPeer::start(const std::string& python, int threads, std::string& why) {
  std::vector<std::string> candidates;
  if (!python.empty()) candidates.push_back(python);
  if (const char* env = std::getenv("ATTNSCOPE_PYTHON"); env && *env) candidates.emplace_back(env);
  if (python.empty()) candidates.emplace_back("python3");
  why.clear();
  for (const std::string& exe : candidates) {
    int in[2], out[2];
    if (pipe(in) != 0) continue;
    if (pipe(out) != 0) {
      close(in[0]);
      close(in[1]);
      continue;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
      const std::string t = std::to_string(threads);
      execlp(exe.c_str(), exe.c_str(), "-u", "-c", kScript, t.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    TorchPeer peer;
    peer.pid_ = pid;
    peer.to_ = in[1];
    peer.from_ = out[0];
    std::string hello;
    if (pid > 0 && peer.exchange("", hello) && hello.rfind("ready ", 0) == 0) {
      peer.description_ = hello.substr(6) + " (" + exe + ")";
      return peer;
    }
    why += (why.empty() ? "" : "; ") + exe + ": " + (hello.empty() ? "did not start" : hello);
  }
  return std::nullopt;
}

TorchPeer::TorchPeer(TorchPeer&& o) noexcept
    : pid_(o.pid_), to_(o.to_), from_(o.from_), description_(std::move(o.description_)), pending_(std::move(o.pending_)) {
  o.pid_ = o.to_ = o.from_ = -1;
}

TorchPeer::~TorchPeer() {
  if (to_ >= 0) close(to_);  // end of input: the script's loop ends and it exits
  if (from_ >= 0) close(from_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
}

bool TorchPeer::exchange(const std::string& request, std::string& reply) {
  reply.clear();
  if (!request.empty()) {
    const std::string line = request + "\n";
    // A peer that died leaves a closed pipe: ignore SIGPIPE so write() just fails.
    signal(SIGPIPE, SIG_IGN);
    if (write(to_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return false;
  }
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    char buf[512];
    const ssize_t n = read(from_, buf, sizeof buf);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

PeerTiming TorchPeer::time(const WorkloadSpec& spec, const std::string& backend, int warmup, int reps) {
  PeerTiming t;
  std::ostringstream req;
  req << toString(spec.dtype) << ' ' << spec.batch << ' ' << spec.heads << ' ' << spec.kvHeads() << ' ' << spec.seq_q
      << ' ' << spec.seqKv() << ' ' << spec.headDim() << ' ' << (spec.mask.kind == MaskKind::causal ? 1 : 0) << ' '
      << spec.effectiveScale() << ' ' << backend << ' ' << warmup << ' ' << reps;
  std::string reply;
  if (!exchange(req.str(), reply)) {
    t.message = "the torch process ended";
    return t;
  }
  std::istringstream in(reply);
  std::string status;
  in >> status;
  if (status == "ok" && (in >> t.median_s >> t.min_s)) {
    t.ok = true;
  } else {
    t.message = reply.rfind("error ", 0) == 0 ? reply.substr(6) : reply;
  }
  return t;
}

}  // namespace attnscope::bench
