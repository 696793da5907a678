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
// backend warmup reps pass kind, or "product op dtype m k n warmup reps" (one matrix product, see
// timeProduct). Answers "ok median min" or "error <one line>".
//   pass  forward: the SDPA call (or the layer) alone; train: also out.backward(G) through
//         autograd, every leaf's .grad cleared before the next call (not timed)
//   kind  attention: SDPA on q, k, v [B, H, L, D]; layer: x [B, L, E] with E = H D, F.linear to
//         the fused q, k, v rows (query rows, then key, then value, as AttnScope's layer), split
//         into heads, SDPA, heads merged, F.linear back to E
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
WARM_S = 0.05
def warm(call, warmup):
    # `warmup` calls (at least one) and more until WARM_S has passed, as bench_cpu warms ours.
    t_end = time.perf_counter() + WARM_S
    for _ in range(max(warmup, 1)):
        call()
    while time.perf_counter() < t_end:
        call()
def product(f):
    # product OP dtype m k n warmup reps: linear x[m,k] w[n,k] b[n]; nn a[m,k] @ b[k,n];
    # tn a[k,m].t() @ b[k,n] (a linear layer's forward, its dx and its dw on contiguous rows).
    op, dt, (m, k, n), warmup, reps = f[1], dtypes[f[2]], (int(x) for x in f[3:6]), int(f[6]), int(f[7])
    g = torch.Generator().manual_seed(2)
    u = lambda *shape: ((torch.rand(*shape, generator=g) * 2 - 1)).to(dt)
    if op == "linear":
        x, w, b = u(m, k), u(n, k), u(n)
        call = lambda: F.linear(x, w, b)
    elif op == "nn":
        a, b = u(m, k), u(k, n)
        call = lambda: a @ b
    elif op == "tn":
        a, b = u(k, m), u(k, n)
        call = lambda: a.t() @ b
    else:
        raise ValueError("unknown product " + op)
    with torch.no_grad():
        warm(call, warmup)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return times
for line in sys.stdin:
    f = line.split()
    try:
        if f[0] == "product":
            times = product(f)
            print("ok %.9f %.9f" % (statistics.median(times), min(times)), flush=True)
            continue
        dt = dtypes[f[0]]
        b, h, hkv, lq, lkv, d = (int(x) for x in f[1:7])
        causal, scale, backend, warmup, reps = f[7] == "1", float(f[8]), f[9], int(f[10]), int(f[11])
        train, layer = f[12] == "train", f[13] == "layer"
        g = torch.Generator().manual_seed(1)
        def uniform(*shape, bound=1.0):
            return ((torch.rand(*shape, generator=g) * 2 - 1) * bound).to(dt).requires_grad_(train)
        sdpa = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                                              enable_gqa=hkv != h)
        if layer:
            e = h * d
            x = uniform(b, lq, e)
            w_qkv, b_qkv = uniform((h + 2 * hkv) * d, e, bound=e ** -0.5), uniform((h + 2 * hkv) * d, bound=e ** -0.5)
            w_o, b_o = uniform(e, h * d, bound=(h * d) ** -0.5), uniform(e, bound=(h * d) ** -0.5)
            leaves = [x, w_qkv, b_qkv, w_o, b_o]
            def forward():
                q, k, v = F.linear(x, w_qkv, b_qkv).split([h * d, hkv * d, hkv * d], dim=-1)
                q = q.view(b, lq, h, d).transpose(1, 2)
                k = k.view(b, lq, hkv, d).transpose(1, 2)
                v = v.view(b, lq, hkv, d).transpose(1, 2)
                return F.linear(sdpa(q, k, v).transpose(1, 2).reshape(b, lq, h * d), w_o, b_o)
            out_shape = (b, lq, e)
        else:
            q, k, v = uniform(b, h, lq, d), uniform(b, hkv, lkv, d), uniform(b, hkv, lkv, d)
            leaves = [q, k, v]
            forward = lambda: sdpa(q, k, v)
            out_shape = (b, h, lq, d)
        grad = (torch.rand(*out_shape, generator=g) * 2 - 1).to(dt)
        def run():
            if train:
                forward().backward(grad)
            else:
                with torch.no_grad():
                    forward()
        with sdpa_kernel(backends[backend]):
            warm(run, warmup)
            times = []
            for _ in range(reps):
                for t in leaves:
                    t.grad = None
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

PeerTiming TorchPeer::ask(const std::string& request) {
  PeerTiming t;
  std::string reply;
  if (!exchange(request, reply)) {
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

PeerTiming TorchPeer::time(const WorkloadSpec& spec, const std::string& backend, int warmup, int reps) {
  std::ostringstream req;
  req << toString(spec.dtype) << ' ' << spec.batch << ' ' << spec.heads << ' ' << spec.kvHeads() << ' ' << spec.seq_q
      << ' ' << spec.seqKv() << ' ' << spec.headDim() << ' ' << (spec.mask.kind == MaskKind::causal ? 1 : 0) << ' '
      << spec.effectiveScale() << ' ' << backend << ' ' << warmup << ' ' << reps << ' ' << toString(spec.pass) << ' '
      << toString(spec.kind);
  return ask(req.str());
}

PeerTiming TorchPeer::timeProduct(const std::string& op, DType dtype, int64_t m, int64_t k, int64_t n, int warmup,
                                  int reps) {
  std::ostringstream req;
  req << "product " << op << ' ' << toString(dtype) << ' ' << m << ' ' << k << ' ' << n << ' ' << warmup << ' ' << reps;
  return ask(req.str());
}

}  // namespace attnscope::bench
