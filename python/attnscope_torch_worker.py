#!/usr/bin/env python3
"""AttnScope's PyTorch worker: runs torch.nn.functional.scaled_dot_product_attention for the
torch.* backends, in the user's own Python, talking JSON lines over stdin/stdout (kind layer:
the layer around it, in attnscope_torch_layer.py beside this script).

Protocol (version 1, documented in docs/TORCH_WORKER.md): on start the worker prints one
"hello" line; then it answers each request line with exactly one response line carrying the
request's id. stdout carries nothing else; Python's and torch's chatter goes to stderr.
Only the standard library and torch are used (numpy is optional for torch and not needed).

With tp > 1 the worker coordinates rank processes (attnscope_torch_ranks.py), each this script
started with --tp-rank R (rank mode: no hello; a "ready" line once it joined the group, then the
same requests from the coordinator; attnscope_torch_tp.py).
"""

import contextlib
import ctypes
import json
import os
import platform
import signal
import sys
import time
import traceback
import warnings


def rank_arguments(argv):
    """Rank mode's --tp-* arguments (attnscope_torch_ranks.py passes them), or None."""
    if "--tp-rank" not in argv:
        return None
    args = {}
    for i in range(1, len(argv) - 1, 2):
        if argv[i].startswith("--tp-"):
            args[argv[i][5:]] = argv[i + 1]
    return args


RANK_ARGS = rank_arguments(sys.argv)
if RANK_ARGS is not None:
    # A rank dies with its coordinator, however that dies (the coordinator's process group is
    # killed by AttnScope too; this covers the coordinator dying alone). Set before importing
    # torch, and the parent checked after it: one that died already does not signal.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    if os.getppid() != int(RANK_ARGS.get("parent", "0")):
        os._exit(1)

# Beside this script, without torch: text for JSON and the names of torch's SDPA choices. Its
# folder is put on the path first: `python -I` (isolated) leaves the script's folder out.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attnscope_torch_trace import CHOICE_NAMES, text  # noqa: E402

PROTOCOL = 1
MIN_TORCH = (2, 0)

# Keep stdout for protocol lines only: anything a library prints goes to stderr.
_protocol_out = sys.stdout
sys.stdout = sys.stderr


def clean(obj):
    if isinstance(obj, str):
        return text(obj)
    if isinstance(obj, dict):
        return {k: clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def send(obj):
    _protocol_out.write(json.dumps(clean(obj), separators=(",", ":")) + "\n")
    _protocol_out.flush()


def version_tuple(text):
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


torch = None
F = None
import_error = None
try:
    import torch  # noqa: E402  (the import is what the hello reports on)
    import torch.nn.functional as F  # noqa: E402
except Exception as e:  # ModuleNotFoundError, or a broken install raising anything
    import_error = "%s: %s" % (type(e).__name__, e) if not isinstance(e, ModuleNotFoundError) else str(e)
if import_error is None:
    # Beside this script (installed with it): the .npy files and the profiler trace's conversion.
    from attnscope_torch_files import read_npy, write_npy  # noqa: E402
    from attnscope_torch_trace import convert_trace  # noqa: E402


def cuda_state():
    """(available, reason) as torch sees CUDA."""
    if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        return False, "this torch %s is a CPU-only build (torch.version.cuda is None)" % torch.__version__
    try:
        if torch.cuda.is_available():
            return True, ""
        torch.cuda.init()  # raises with torch's own reason
        return False, "torch.cuda.is_available() is False"
    except Exception as e:
        return False, str(e).strip().splitlines()[0]


def hello():
    msg = {"type": "hello", "protocol": PROTOCOL, "python": platform.python_version(),
           "executable": sys.executable, "pid": os.getpid()}
    if torch is None:
        msg["error"] = import_error
        return msg
    msg["torch"] = torch.__version__
    if version_tuple(torch.__version__) < MIN_TORCH:
        msg["error"] = "torch %s is too old: AttnScope needs torch 2.0 or newer (scaled_dot_product_attention)" % (
            torch.__version__)
        return msg
    msg["torch_cuda"] = torch.version.cuda or ""
    try:
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    except Exception:
        cudnn = None
    msg["torch_cudnn"] = str(cudnn) if cudnn else ""
    ok, reason = cuda_state()
    msg["cuda_available"] = ok
    msg["cuda_reason"] = reason
    devices = []
    if ok:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            devices.append({"index": i, "name": p.name, "capability": "%d.%d" % (p.major, p.minor),
                            "memory": int(p.total_memory)})
    msg["cuda_devices"] = devices
    msg["threads"] = torch.get_num_threads()
    msg["gloo"], msg["nccl"] = distributed_backends()
    msg["sdpa_kernel"] = has_sdpa_kernel()
    msg["enable_gqa"] = has_enable_gqa()
    msg["causal_lower_right"] = has_causal_lower_right()
    return msg


def distributed_backends():
    """(gloo, nccl): the torch.distributed backends this torch has (tp > 1 needs one)."""
    try:
        import torch.distributed as dist
        if not dist.is_available():
            return False, False
        return bool(dist.is_gloo_available()), bool(dist.is_nccl_available())
    except Exception:
        return False, False


def has_sdpa_kernel():
    try:
        from torch.nn.attention import sdpa_kernel  # noqa: F401  (2.3+)
        return True
    except Exception:
        return False


def has_enable_gqa():
    return version_tuple(torch.__version__) >= (2, 5)


def has_causal_lower_right():
    try:
        from torch.nn.attention.bias import causal_lower_right  # noqa: F401  (2.3+)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------
# Kernels and their names.



def kernel_context(kernel):
    """A context manager that lets only `kernel` run (auto: torch's own choice)."""
    if kernel == "auto":
        return contextlib.nullcontext()
    if has_sdpa_kernel():
        from torch.nn.attention import SDPBackend, sdpa_kernel
        names = {"math": "MATH", "flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
                 "cudnn": "CUDNN_ATTENTION"}
        if not hasattr(SDPBackend, names[kernel]):
            raise Unsupported("torch %s cannot force the %s kernel (SDPBackend.%s does not exist)" % (
                torch.__version__, kernel, names[kernel]))
        if kernel == "cudnn" and version_tuple(torch.__version__) < (2, 4):
            raise Unsupported("torch %s's sdpa_kernel ignores CUDNN_ATTENTION (2.4+ forces cuDNN)" % torch.__version__)
        return sdpa_kernel(getattr(SDPBackend, names[kernel]))
    if kernel == "cudnn":
        raise Unsupported("torch %s has no cuDNN attention (2.3+)" % torch.__version__)
    return torch.backends.cuda.sdp_kernel(enable_flash=kernel == "flash", enable_math=kernel == "math",
                                          enable_mem_efficient=kernel == "efficient")


class Unsupported(Exception):
    pass


# torch's CPU allocator fails with a plain RuntimeError: "DefaultCPUAllocator: can't allocate
# memory: you tried to allocate N bytes" (2.15; "not enough memory" in older releases).
CPU_OOM_TEXTS = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def classify(exc):
    """(status, message) for an exception raised by torch."""
    message = str(exc).strip()
    if getattr(exc, "rank_status", None):  # a tp rank's failure, already classified by the rank
        return exc.rank_status, message
    # CUDA's caching allocator raises torch.cuda.OutOfMemoryError (torch.OutOfMemoryError in newer releases).
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None))
                      if isinstance(t, type)) if torch is not None else ()
    if (oom_types and isinstance(exc, oom_types)) or "out of memory" in message.lower():
        return "oom", message
    if any(t in message for t in CPU_OOM_TEXTS):
        return "oom", "%s: %s" % (type(exc).__name__, message)
    if isinstance(exc, Unsupported) or "No available kernel" in message or "No viable backend" in message:
        return "unsupported", message
    if isinstance(exc, MemoryError):
        return "oom", "MemoryError: " + message
    return "error", "%s: %s" % (type(exc).__name__, message)


# ---------------------------------------------------------------------------------------------
# One loaded workload.

def _dtypes():
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16} if torch is not None else {}


DTYPES = _dtypes()


class Workload:
    def __init__(self, req, tp=None):
        spec = req["spec"]
        self.kernel = req["kernel"]
        self.device = torch.device(req["device"])
        self.tp = tp  # tp > 1: this rank's place (attnscope_torch_tp.Rank); the layer holds its heads
        self.notes = []
        dtype = DTYPES[spec["dtype"]]
        d = req["dir"]
        load = lambda name: read_npy(os.path.join(d, name)).to(self.device, dtype).contiguous()
        # pass train: forward, then loss = sum(O * G) backward through autograd; dQ, dK, dV are
        # the leaves' gradients (checkpoint attention: the call runs under torch.utils.checkpoint).
        self.train = spec.get("pass", "forward") == "train"
        checkpoint = spec.get("checkpoint", "none") if self.train else "none"
        self.checkpoint = checkpoint == "attention"
        # kind layer: x and the weights; the layer computes q, k, v in each call (the module
        # beside this script). Otherwise q, k, v are the inputs.
        self.layer = None
        self.q = self.k = self.v = None
        if spec.get("kind", "attention") == "layer":
            try:
                import attnscope_torch_layer
            except ImportError as e:
                raise RuntimeError("kind layer needs attnscope_torch_layer.py next to the worker script (%s)" % e)
            self.layer = attnscope_torch_layer.Layer(spec, load, self, tp)
        else:
            self.q, self.k, self.v = load("q.npy"), load("k.npy"), load("v.npy")
        self.g = load("g.npy") if self.train else None
        self.grads = None
        self.q_factor = 1.0
        self.repeat = 1
        self.kwargs = {"scale": spec["scale"]}
        if version_tuple(torch.__version__) < (2, 1):
            # 2.0 has no scale argument: fold the scale into q (SDPA multiplies by 1/sqrt(D)).
            del self.kwargs["scale"]
            self.q_factor = spec["scale"] * spec["head_dim"] ** 0.5
            if self.layer is None:
                self.q = self.q * self.q_factor  # a layer folds it into its projected q in each call
            self.notes.append("scale folded into q (torch 2.0 has no scale argument)")
        hq, hkv = spec["heads"], spec["kv_heads"]
        if hq != hkv:
            if has_enable_gqa():
                self.kwargs["enable_gqa"] = True
                self.notes.append("GQA via enable_gqa=True")
            elif self.train or self.layer is not None:
                # Repeated inside the call, so autograd sums dK, dV over each group's heads (a
                # layer's K and V only exist inside the call).
                self.repeat = hq // hkv
                self.notes.append("GQA: K/V repeated to %d heads in the call (torch %s has no enable_gqa)" % (
                    hq, torch.__version__))
            else:
                rep = hq // hkv
                self.k = self.k.repeat_interleave(rep, dim=1).contiguous()
                self.v = self.v.repeat_interleave(rep, dim=1).contiguous()
                self.notes.append("GQA: K/V repeated to %d heads (torch %s has no enable_gqa)" % (hq, torch.__version__))
        if self.layer is not None:
            layers = self.layer.count
            self.notes.append("layer: F.linear, SDPA, F.linear" + (", a stack of %d layers" % layers if layers > 1 else ""))
        if self.train:
            under = {"attention": "attention" if self.layer else "forward", "layer": "each layer's forward"}.get(checkpoint)
            self.notes.append("train: loss = sum(%s * G) backward through autograd" % ("y" if self.layer else "O") +
                              (", %s under torch.utils.checkpoint" % under if under else ""))
        self.mask = None  # the tensor we hold (counted as an input)
        self.choice_mask = None  # what _fused_sdp_choice is asked about
        self.is_causal = False
        mask = spec["mask_passing"]
        lq, lkv = spec["seq"], spec["seq_kv"]
        if mask == "causal" and lq == lkv:
            self.is_causal = True
            self.notes.append("mask: is_causal=True")
        elif mask == "causal" and has_causal_lower_right():
            from torch.nn.attention.bias import causal_lower_right
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "will produce NaNs when seq_len_q > seq_len_kv": we check
                self.kwargs["attn_mask"] = causal_lower_right(lq, lkv)
            self.choice_mask = self.kwargs["attn_mask"]._materialize(self.device)
            self.notes.append("mask: causal_lower_right(%d, %d)" % (lq, lkv))
        elif mask in ("causal", "tensor"):
            self.mask = read_npy(os.path.join(d, "mask.npy")).to(self.device)
            shape = "x".join(str(x) for x in self.mask.shape)
            if self.mask.dtype != torch.bool:
                # An additive mask: a float tensor added to the scaled scores, in mask_dtype (fp32 or
                # q's dtype; bf16 arrives as float32 holding bf16 values, so the cast is exact).
                mask_dtype = DTYPES[spec.get("mask_dtype") or spec["dtype"]]
                self.mask = self.mask.to(mask_dtype).contiguous()
                self.notes.append("mask: additive %s tensor [%s]" % (str(mask_dtype).replace("torch.", ""), shape))
            else:
                self.notes.append("mask: boolean tensor [%s]" % shape if mask == "tensor" else
                                  "mask: causal as a boolean tensor [%s] (torch %s has no causal_lower_right)" % (
                                      shape, torch.__version__))
            if tp is not None:
                self.mask = tp.mask_heads(self.mask, spec["heads"])  # a per-head mask: this rank's heads
            self.kwargs["attn_mask"] = self.mask
            self.choice_mask = self.mask
        self.input_bytes = sum(t.numel() * t.element_size() for _, t in self.input_tensors())
        self.choice = self.fused_choice()

    def input_tensors(self):
        """(name, tensor) of what was loaded before any call: live throughout the profiled call."""
        first = self.layer.input_tensors() if self.layer else [("q", self.q), ("k", self.k), ("v", self.v)]
        return [(n, t) for n, t in first + [("mask", self.mask), ("g", self.g)] if t is not None]

    def fused_choice(self):
        q, k, v = self.layer.choice_tensors() if self.layer else (self.q, self.k, self.v)
        if self.layer and self.repeat > 1:
            k, v = k.repeat_interleave(self.repeat, dim=1), v.repeat_interleave(self.repeat, dim=1)
        args = (q, k, v, self.choice_mask, 0.0, self.is_causal)
        kw = {"scale": self.kwargs["scale"]} if "scale" in self.kwargs else {}
        if "enable_gqa" in self.kwargs:
            kw["enable_gqa"] = True
        try:
            with kernel_context(self.kernel):
                return CHOICE_NAMES.get(int(torch._fused_sdp_choice(*args, **kw)), "unknown")
        except Unsupported:
            raise
        except Exception:
            return ""  # no kernel can run: the call itself will say why

    def sdpa(self, q, k, v):
        if self.repeat > 1:
            k, v = k.repeat_interleave(self.repeat, dim=1), v.repeat_interleave(self.repeat, dim=1)
        return F.scaled_dot_product_attention(q, k, v, is_causal=self.is_causal, **self.kwargs)

    def call(self):
        if self.layer is not None:
            return self.layer.call()
        if not self.train:
            return self.sdpa(self.q, self.k, self.v)
        # Leaves sharing the inputs' storage (no copies); the gradients are autograd's own tensors.
        q, k, v = (t.detach().requires_grad_() for t in (self.q, self.k, self.v))
        if self.checkpoint:
            from torch.utils.checkpoint import checkpoint
            out = checkpoint(self.sdpa, q, k, v, use_reentrant=False)
        else:
            out = self.sdpa(q, k, v)
        out.backward(self.g)  # loss = sum(O * G): G is dL/dO, handed to autograd as it is
        # dQ of the folded q (torch 2.0) times the fold is dQ of the original q.
        self.grads = (q.grad * self.q_factor if self.q_factor != 1.0 else q.grad, k.grad, v.grad)
        return out.detach()

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def run_once(w, reply):
    """One timed call; seconds by perf_counter on the CPU, CUDA events on a GPU. A layer on the CPU
    also reports its phases (CPU ops finish before they return, so the boundaries are exact; on a
    GPU they would need a synchronisation each, which would change the timed call)."""
    phased = w.layer is not None and w.device.type == "cpu"
    if phased:
        w.layer.phases = []
    try:
        reply["seconds"] = timed_call(w)
    finally:
        if phased:
            reply["phases"] = w.layer.phases
            w.layer.phases = None


def timed_call(w):
    with kernel_context(w.kernel):
        if w.tp is not None:
            w.tp.barrier()  # the ranks start together; outside the timed range
            w.tp.armed = True
        if w.device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            w.synchronize()
            start.record()
            out = w.call()
            end.record()
            end.synchronize()
            seconds = start.elapsed_time(end) / 1000.0
        else:
            t0 = time.perf_counter()
            out = w.call()
            seconds = time.perf_counter() - t0
        if w.tp is not None:
            w.tp.armed = False
    del out
    w.grads = None
    if w.layer is not None:
        w.layer.grads = None
    return seconds


def profiled_call(w, out_path, trace_dir, max_events):
    """One extra call under the profiler: memory, the kernel that ran, the trace, the output."""
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU]
    if w.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    w.synchronize()
    cuda_base = None
    if w.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(w.device)
        cuda_base = torch.cuda.memory_allocated(w.device)
    if w.layer is not None:
        w.layer.phases = []
    if w.tp is not None:
        w.tp.barrier()
    with kernel_context(w.kernel):
        with profile(activities=activities, profile_memory=True) as prof:
            t_start = time.monotonic_ns()
            with record_function("attnscope.sdpa"):
                try:
                    out = w.call()
                    w.synchronize()
                finally:
                    t_end = time.monotonic_ns()
                    phases = w.layer.phases if w.layer is not None else None
                    if w.layer is not None:
                        w.layer.phases = None
    result = {"call_ns": t_end - t_start}
    if w.device.type == "cuda":
        result["peak_bytes"] = int(torch.cuda.max_memory_allocated(w.device))
        result["cuda_base_bytes"] = int(cuda_base)
        result["reserved_bytes"] = int(torch.cuda.max_memory_reserved(w.device))
    write_npy(out_path, out)
    del out
    if w.train and w.layer is not None:
        w.layer.write_gradients(os.path.dirname(out_path), write_npy)
        w.layer.grads = None
    elif w.train:
        for name, grad in zip(("dq.npy", "dk.npy", "dv.npy"), w.grads):
            write_npy(os.path.join(os.path.dirname(out_path), name), grad)
    w.grads = None
    path = os.path.join(trace_dir, "torch_trace.json")
    prof.export_chrome_trace(path)
    with open(path) as f:
        trace = json.load(f)
    os.unlink(path)
    result.update(convert_trace(trace, t_start, max_events, phases, w.input_tensors(), w.input_bytes,
                                w.device.type == "cpu"))
    return result


# ---------------------------------------------------------------------------------------------

def serve(handle, on_failure=None):
    """Answers each request line on stdin with exactly one line: handle(op, req, reply, notes)
    fills the reply (notes: more warnings) and returns False once the worker should exit; an
    exception becomes the reply's status and message (on_failure may add to that reply)."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        rid, op = req.get("id"), req.get("op")
        reply = {"id": rid, "ok": True}
        more, go_on = [], True
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                go_on = handle(op, req, reply, more)
            except Exception as e:  # every failure goes back to AttnScope as the point's status
                status, message = classify(e)
                reply = {"id": rid, "ok": False, "status": status, "message": message}
                if status == "error":
                    traceback.print_exc(file=sys.stderr)
                if on_failure is not None:
                    on_failure(op, reply)
        texts = []
        for text in [str(wmsg.message).strip() for wmsg in caught] + more:
            if "rofiler" in text:  # the profiler's own notes are not torch's words about the workload
                continue
            if text and text not in texts:
                texts.append(text)
        reply["warnings"] = texts
        send(reply)
        if go_on is False:
            return


class Worker:
    """What AttnScope talks to: one workload at a time, run here or (tp > 1) by a group of ranks."""

    def __init__(self):
        self.workload = None
        self.group = None  # attnscope_torch_ranks.RankGroup, kept between loads of its size

    def ranked(self):
        return self.group is not None and self.workload is not None and not isinstance(self.workload, Workload)

    def handle(self, op, req, reply, more):
        if op == "load":
            self.workload = None
            if req["device"].startswith("cuda"):
                torch.cuda.empty_cache()
            spec = req["spec"]
            tp = int(spec.get("tp", 1)) if spec.get("kind") == "layer" else 1
            if tp == 1 and self.group is not None and self.group.device_type == "cuda":
                # Idle ranks would hold a CUDA context each, on the GPUs this load measures. On the
                # CPU they are kept: the next tp point of a sweep need not import torch again.
                self.stop_ranks()
            self.workload = self.load_ranked(req, tp) if tp > 1 else Workload(req)
            reply.update({"choice": self.workload.choice, "notes": self.workload.notes,
                          "input_bytes": self.workload.input_bytes})
        elif op == "run":
            if self.ranked():
                reply.update(self.workload.run(req))
            else:
                run_once(self.workload, reply)
        elif op == "finish":
            if self.ranked():
                reply.update(self.workload.finish(req))
            else:
                reply.update(profiled_call(self.workload, req["out"], req["dir"], int(req.get("max_events", 20000))))
        elif op == "intermediates":  # kind layer: the stages' tensors for the accuracy check
            if self.ranked():
                reply.update(self.workload.intermediates(req))
            else:
                with kernel_context(self.workload.kernel):
                    reply["written"] = self.workload.layer.write_intermediates(req["dir"], write_npy)
        elif op == "release":
            if self.ranked():
                self.workload.release(req)
            self.workload = None
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        elif op == "ping":  # AttnScope asks an idle worker whether it still answers
            pass
        elif op == "quit":
            self.stop_ranks()
            return False
        else:
            reply.clear()
            reply.update({"id": req.get("id"), "ok": False, "status": "error", "message": "unknown op %r" % op})
        if self.ranked():
            more += self.workload.warnings
        return True

    def load_ranked(self, req, tp):
        import attnscope_torch_ranks
        device_type = "cuda" if req["device"].startswith("cuda") else "cpu"
        if device_type == "cuda" and torch.cuda.device_count() < tp:
            raise Unsupported("tp %d needs %d GPUs (one rank per device); torch sees %d" % (
                tp, tp, torch.cuda.device_count()))
        threads = max(1, torch.get_num_threads() // tp)
        if self.group is not None and not self.group.matches(tp, device_type, threads):
            self.stop_ranks()
        if self.group is None:
            self.group = attnscope_torch_ranks.RankGroup(tp, device_type, threads, float(req.get("timeout", 600)))
        return attnscope_torch_ranks.Ranked(self.group, req)

    def failed(self, op, reply):
        # A rank's failure killed the group: the next load starts a fresh one.
        if self.group is not None and not self.group.alive():
            self.group = None
            self.workload = None
        if op == "load":
            self.workload = None

    def stop_ranks(self):
        if self.group is not None:
            self.group.quit()
        self.group = None


def main():
    if RANK_ARGS is not None:
        return rank_main(RANK_ARGS)
    h = hello()
    send(h)
    if "error" in h:
        return 0
    worker = Worker()
    try:
        serve(worker.handle, worker.failed)
    finally:
        worker.stop_ranks()
    return 0


def rank_main(args):
    """Rank mode: one rank of a tp group, started by attnscope_torch_ranks.py. Says "ready" once it
    joined the group, then answers the coordinator's requests as the worker answers AttnScope's."""
    if torch is None:
        send({"type": "ready", "error": import_error})
        return 1
    import attnscope_torch_tp
    torch.set_num_threads(int(args["threads"]))
    tp = attnscope_torch_tp.Rank(int(args["rank"]), int(args["world"]), args["device"], "allreduce",
                                 float(args["timeout"]))
    try:
        tp.init(args["store"])
    except Exception as e:
        send({"type": "ready", "error": "%s: %s" % (type(e).__name__, str(e).strip())})
        return 1
    send({"type": "ready", "rank": tp.rank, "pid": os.getpid()})
    state = {"w": None}

    def handle(op, req, reply, more):
        tp.comm_failed = False
        w = state["w"]
        if op == "load":
            state["w"] = None
            tp.comm = req["spec"].get("tp_comm", "allreduce")
            w = state["w"] = Workload(req, tp)
            w.tp_calls = []  # (seconds, comm ns or None) of each timed call
            reply.update({"choice": w.choice, "notes": w.notes, "input_bytes": w.input_bytes})
        elif op == "run":
            run_once(w, reply)
            comm = None
            if "phases" in reply:
                comm = sum(p["e"] - p["s"] for p in reply["phases"] if p["n"] == "comm")
            w.tp_calls.append((reply["seconds"], comm))
        elif op == "finish":
            reply.update(profiled_call(w, req["out"], req["dir"], int(req.get("max_events", 20000))))
            reply.update(rank_stats(w, reply))
        elif op == "intermediates":
            with kernel_context(w.kernel):
                reply["written"] = w.layer.write_intermediates(req["dir"], write_npy)
        elif op == "release":
            state["w"] = None
            if torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        elif op == "quit":
            tp.close()
            return False
        return True

    def failed(op, reply):
        reply["comm_failed"] = tp.comm_failed  # a peer's failure seen in a collective, not ours

    serve(handle, failed)
    return 0


def rank_stats(w, result):
    """This rank's time (the median of its timed calls after the first, which connects gloo's
    pairs and warms torch's caches: the engine's warm-up by default) and its communication's
    share over the same calls: their "comm" phases where they report phases (the CPU), else the
    profiled call's."""
    import statistics
    calls = w.tp_calls[1:] if len(w.tp_calls) > 1 else w.tp_calls
    seconds = [s for s, _ in calls]
    call_ns = max(1, int(result.get("call_ns", 1)))
    stats = {"rank_seconds": statistics.median(seconds) if seconds else call_ns / 1e9}
    if calls and all(c is not None for _, c in calls):
        stats["comm_share"] = sum(c for _, c in calls) / max(1.0, sum(seconds) * 1e9)
    else:
        comm = sum(e["e"] - e["s"] for e in result.get("events", []) if e.get("k") == "phase" and e.get("n") == "comm")
        stats["comm_share"] = comm / call_ns
    return stats


if __name__ == "__main__":
    sys.exit(main())
