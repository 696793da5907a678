#!/usr/bin/env python3
"""AttnScope's recorder: runs a PyTorch program as `python SCRIPT.py ARGS` or `python -m MODULE ARGS`
would, and records the attention calls it makes into one JSON file (what `attnscope record` runs).

  PY attnscope_record.py --out FILE [--samples K] [--max-signatures N] -- SCRIPT.py [ARGS...]
  PY attnscope_record.py --out FILE [--samples K] [--max-signatures N] -- -m MODULE [ARGS...]

The program runs in this process as Python itself would run it: sys.argv, sys.path[0], __name__,
__file__, the __main__ module, tracebacks (the recorder's frames are cut off), stdin/stdout/stderr and
the exit status are Python's (an uncaught exception: its traceback and 1; KeyboardInterrupt: its
traceback, then death by SIGINT; SystemExit: its code). An exception torch raises inside a wrapped
call passes unchanged, with three of the recorder's frames in its traceback, and a warning torch
raises inside one names the recorder's line. Statuses of our own: 2 for a bad option, an
unwritable FILE or a script that cannot be opened (Python's "can't open file" message), 3 when this
Python has no torch 2.0 or newer (one line on stderr; FILE is still written, with "error" set).

What is seen. Before the program runs, torch is imported and three Python names are wrapped:
  torch.nn.functional.scaled_dot_product_attention: direct calls, and those of nn.MultiheadAttention
      and nn.TransformerEncoderLayer outside their fast paths (F.multi_head_attention_forward looks
      the name up as a module global when it is called);
  torch._native_multi_head_attention: nn.MultiheadAttention's inference fast path (eval, no grad,
      batch_first, self-attention...), which never reaches SDPA's Python name;
  torch._transformer_encoder_layer_fwd: nn.TransformerEncoderLayer's (so nn.TransformerEncoder's)
      inference fast path, which runs the whole layer, native attention included, in C++.
  For the last two, q/k/v are the per-head shapes [B, num_heads, L, E/num_heads] derived from the
  arguments (the projections happen inside the op, and its time and memory include them).
Not seen: code under torch.compile (dynamo traces through the wrappers, and the compiled graph calls
torch's ops itself), TorchScript (the wrappers are registered as the aten ops' builtins, so scripting
still compiles, and scripted code runs in C++), flash_attn, xformers or torch.ops.aten.* called
directly, and nn.attention.bias.CausalBias's own flash / efficient calls (its other variants call
SDPA, which is seen). Counted in "calls_skipped" and passed straight to torch: calls whose tensors
have __torch_function__ (nested jagged tensors, DTensor, FX proxies), calls while a TorchDispatchMode
of the program's is active (FakeTensorMode, make_fx, export: our own aten calls would land in their
traces), calls during CUDA graph capture, and nested calls.

Per call: the call site (first frame outside torch, this file and runpy/importlib), the innermost
nn.Module being run (global forward hooks keep a per-thread stack; "Root.path.in.named_modules"),
q/k/v/mask layouts, the arguments, requires_grad (grad enabled and any of q/k/v requires it),
torch._fused_sdp_choice on the same arguments, and the kernel that ran: the aten ops that a
TorchDispatchMode sees, matched against attnscope_torch_trace.KERNEL_OPS ("math" when none matched
and the choice was math: the math path decomposes into bmm/softmax). The mode costs about 70 us a
call (measured), so it runs on the first call of each signature only and the kernel is taken to
follow from the signature, which holds the fused choice (the kernel flags in force). The fast paths'
ops run inside one C++ op, where no mode sees them; the profiler does (below): on the CPU they run
their own bmm + softmax, reported as "math".

Time: CUDA events around the call (synchronised on the end event), time.perf_counter on the CPU.
Memory the call allocated: on CUDA max_memory_allocated() after the call less memory_allocated() on
entry, with the peak reset on entry (so the program's own max_memory_allocated() only covers what
came after the last recorded call); on the CPU, for the first K calls of each signature, the call
runs under torch.profiler(profile_memory=True), and the bytes are the peak of "Total Allocated" over
its [memory] events less the base, as attnscope_torch_trace.convert_trace computes it. Those calls'
times include the profiler's overhead, the first one of the process takes ~1.5 s more to start
Kineto, and Kineto's log is silenced (KINETO_LOG_LEVEL=6 while it starts) so its "profiler_start"
lines do not reach the program's stderr (nor, after that, those of the program's own profiler, since
Kineto reads the level once). No memory (counted in "memory_skipped") for a call made while the
program's own profiler runs, nor for one in another thread before a main-thread call has started
Kineto (started elsewhere it prints an error whatever the level). Backward: from the output's
grad_fn pre-hook to the moment the last of q/k/v's gradients is computed (tensor hooks), which may
include other graph work that autograd interleaves (and, when several calls share a q/k/v leaf, runs
to when its summed gradient is ready); on CUDA with its own peak; on the CPU time only: torch 2.15's
profiler cannot be started inside autograd's hooks (the engine restores its thread state around each
node, the profiler records nothing and warns "disableProfiler called but no active profiling session
found").

Overhead, measured on an AMD EPYC (2 cores), torch 2.15.0 on the CPU, one thread, 2026-12-02:
100,000 tiny SDPA calls ([1, 1, 4, 8] float32, one call site) take 0.46 s without the recorder and
1.60 s with it (best of 3 runs each), so about 11 us of recorder time per call, and write a 1.8 kB
file. The global module hooks add about 2.4 us to every nn.Module call (0.8 us -> 3.2 us for an
nn.Identity). The periodic write costs a JSON dump of all signatures: it comes at most every 0.5 s,
and never more often than 20 times its own duration.

FILE: one JSON object (format 1), written atomically (FILE.tmp, fsync, rename) before the program
starts, at most every 0.5 s while calls arrive, and once at the end ("complete": true) from the
launcher or atexit, whichever comes first, so a SIGKILL leaves the last periodic write. SIGTERM is
written ("terminated") before the default action runs; Ctrl-C is a KeyboardInterrupt in the program,
as always, and its final write says "interrupted". A forked child records nothing.
Beyond the fields AttnScope's format 1 names, the file holds: "program" (the argv after --), "cwd",
"samples_per_signature", "max_signatures", "exit_code" (the program's status; negative: the signal
that ended it), "interrupted", "terminated", "calls_skipped" ({reason: count}), "memory_skipped",
"backward_untracked" (backward hooks dropped, or a backward that computed none of q/k/v's
gradients), "recorder_errors" ([{"error", "count"}]: failures inside the recorder, whose calls went
on unrecorded); per call "raised" (the first exception torch raised, "" when none) and
"raised_count", and "grad_fn" in "backward". "cuda_available" is null until the program has
initialised CUDA or the final write asks.
"""

import atexit
import builtins
import functools
import importlib.machinery
import importlib.util
import json
import marshal
import math
import os
import platform
import signal
import sys
import tempfile
import threading
import time
import types
import warnings
import weakref
import zipfile

# Beside this script: the aten op names of SDPA's kernels (no torch needed to import it).
from attnscope_torch_trace import CHOICE_NAMES, KERNEL_OPS, text

FORMAT = 1
MIN_TORCH = (2, 0)
PROG = "attnscope record"
DEFAULT_SAMPLES = 3
DEFAULT_MAX_SIGNATURES = 10000
WRITE_INTERVAL_S = 0.5
# Backward records whose backward has not started; beyond this the oldest lose their hooks (calls
# whose graph is dropped without a backward must not keep hooks on a reused leaf tensor forever).
MAX_PENDING_BACKWARD = 4096
# The aten ops of attention that the dispatch mode and the profiler note (forward and _backward).
ATTENTION_OP_PARTS = ("scaled_dot_product", "_flash_attention", "_efficient_attention")
# The fast paths' own unfused attention: bmm + one of these (torch 2.15 on the CPU, always).
SOFTMAX_OPS = ("_softmax", "_masked_softmax")
SDPA = "scaled_dot_product_attention"
NATIVE_MHA = "_native_multi_head_attention"
ENCODER_LAYER = "_transformer_encoder_layer_fwd"
_THIS_FILE = os.path.abspath(__file__)


# ---------------------------------------------------------------------------------------------
# JSON (text() is attnscope_torch_trace's, shared with the worker).

def clean(obj):
    """obj with valid UTF-8 strings and no NaN or infinity (null instead: JSON has neither)."""
    if isinstance(obj, str):
        return text(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {text(str(k)): clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean(v) for v in obj]
    return obj


def cpu_amx():
    """The AMX flags of this machine's CPU (/proc/cpuinfo): torch's CPU flash packs K and V with them."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return sorted(set(line.split()) & {"amx_bf16", "amx_fp16"})
    except OSError:
        pass
    return []


def version_tuple(s):
    parts = []
    for piece in s.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def first_line(exc):
    lines = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, lines[0][:500]) if lines else type(exc).__name__


def scalar(x):
    """A float, int, bool or None argument as itself; anything else (a tensor, a numpy float) as a
    float when it has one, so the signature stays hashable and the JSON a number."""
    if x is None or type(x) in (float, int, bool):
        return x
    try:
        return float(x)
    except Exception:
        return repr(x)


# ---------------------------------------------------------------------------------------------
# Options.

class UsageError(Exception):
    pass


USAGE = ("usage: attnscope_record.py --out FILE [--samples K] [--max-signatures N] "
         "-- SCRIPT.py [ARGS...] | -- -m MODULE [ARGS...]")


def parse_args(argv):
    """(options, program): program is argv after the options (after "--" when given)."""
    opts = {"out": None, "samples": DEFAULT_SAMPLES, "max_signatures": DEFAULT_MAX_SIGNATURES}
    names = {"--out": "out", "--samples": "samples", "--max-signatures": "max_signatures"}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-h", "--help"):
            raise UsageError("")
        name, eq, value = arg.partition("=")
        if name not in names:
            if arg.startswith("--"):
                raise UsageError("unknown option %s" % arg)
            break  # the program starts here
        if not eq:
            if i + 1 >= len(argv):
                raise UsageError("%s needs a value" % name)
            i += 1
            value = argv[i]
        opts[names[name]] = value
        i += 1
    program = argv[i:]
    if not opts["out"]:
        raise UsageError("--out FILE is required")
    for key, least in (("samples", 0), ("max_signatures", 1)):
        try:
            opts[key] = int(opts[key])
        except ValueError:
            raise UsageError("--%s needs an integer, not %r" % (key.replace("_", "-"), opts[key]))
        if opts[key] < least:
            raise UsageError("--%s must be at least %d" % (key.replace("_", "-"), least))
    if not program:
        raise UsageError("no program to run (SCRIPT.py or -m MODULE after --)")
    if program[0] == "-m" and len(program) < 2:
        raise UsageError("-m needs a module name")
    if program[0].startswith("-") and program[0] != "-m":
        raise UsageError("only SCRIPT.py or -m MODULE can be run, not %s" % program[0])
    return opts, program


# ---------------------------------------------------------------------------------------------
# Per-thread state and the records.

class _ThreadState(threading.local):
    def __init__(self):
        self.modules = []  # nn.Modules being run, outermost first
        self.busy = False  # inside a recorded call: a nested one passes straight through


class _Stats:
    """Time and memory of a signature's forward or backward calls."""
    __slots__ = ("count", "time_total", "time_min", "time_max", "memory_measured", "bytes_min", "bytes_max")

    def __init__(self):
        self.count = 0
        self.time_total = 0.0
        self.time_min = self.time_max = None
        self.memory_measured = 0
        self.bytes_min = self.bytes_max = None

    def add(self, seconds, nbytes):
        self.count += 1
        self.time_total += seconds
        if self.time_min is None or seconds < self.time_min:
            self.time_min = seconds
        if self.time_max is None or seconds > self.time_max:
            self.time_max = seconds
        if nbytes is not None:
            self.memory_measured += 1
            if self.bytes_min is None or nbytes < self.bytes_min:
                self.bytes_min = nbytes
            if self.bytes_max is None or nbytes > self.bytes_max:
                self.bytes_max = nbytes

    def json(self):
        return {"count": self.count, "time_total_s": self.time_total, "time_min_s": self.time_min,
                "time_max_s": self.time_max, "memory_measured": self.memory_measured,
                "bytes_min": self.bytes_min, "bytes_max": self.bytes_max}


class _Signature:
    """All calls with one key: (op, site, module, q, k, v, mask, is_causal, dropout_p, scale,
    enable_gqa, requires_grad, fused choice, extra), the tensors as (shape, stride, offset, dtype,
    device, contiguous) and the mask as (kind, shape, stride, broadcast, materialised)."""
    __slots__ = ("key", "notes", "ran", "aten_ops", "stats", "memory_method", "raised", "raised_count",
                 "backward", "grad_fn", "samples")

    def __init__(self, key, notes):
        self.key = key
        self.notes = list(notes)
        self.ran = None  # None until a call has completed under the dispatch mode or the profiler
        self.aten_ops = []
        self.stats = _Stats()
        self.memory_method = ""
        self.raised = ""
        self.raised_count = 0
        self.backward = None
        self.grad_fn = ""
        self.samples = []  # [time_s, bytes, backward_time_s, backward_bytes] of the first K calls

    def json(self):
        (op, site, module, q, k, v, mask, is_causal, dropout_p, scale, enable_gqa, requires_grad,
         choice, _extra) = self.key
        s = self.stats
        entry = {"op": op, "site": site, "module": module, "q": tensor_json(q), "k": tensor_json(k),
                 "v": tensor_json(v), "mask": mask_json(mask), "is_causal": is_causal, "dropout_p": dropout_p,
                 "scale": scale, "enable_gqa": enable_gqa, "requires_grad": requires_grad,
                 "fused_choice": choice, "aten_ops": list(self.aten_ops), "ran": self.ran or "",
                 "notes": list(self.notes), "count": s.count, "time_total_s": s.time_total,
                 "time_min_s": s.time_min, "time_max_s": s.time_max, "memory_method": self.memory_method,
                 "memory_measured": s.memory_measured, "bytes_min": s.bytes_min, "bytes_max": s.bytes_max,
                 "raised": self.raised, "raised_count": self.raised_count, "backward": None,
                 "samples": [{"time_s": t, "bytes": b, "backward_time_s": bt, "backward_bytes": bb}
                             for t, b, bt, bb in self.samples]}
        if self.backward is not None:
            entry["backward"] = dict(self.backward.json(), grad_fn=self.grad_fn)
        return entry


def tensor_json(d):
    shape, stride, offset, dtype, device, contiguous = d
    return {"shape": list(shape), "stride": list(stride), "offset": offset,
            "dtype": str(dtype).replace("torch.", ""), "device": str(device), "contiguous": contiguous}


def mask_json(d):
    kind, shape, stride, broadcast, materialised = d
    return {"kind": kind, "shape": None if shape is None else list(shape),
            "stride": None if stride is None else list(stride), "broadcast": broadcast,
            "materialised": materialised}


NO_MASK = ("none", None, None, False, False)


def contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def mask_desc(mask, target, view=None):
    """The mask against the attention's [.., L, S] shape `target`, right-aligned as SDPA broadcasts
    it; `view`: (shape, stride) of how the op reads a mask of another layout (native key padding)."""
    if mask is None:
        return NO_MASK
    shape, stride = tuple(mask.shape), mask.stride()
    vshape, vstride = view or (shape, stride)
    lead = len(target) - len(vshape)
    broadcast = lead > 0 and any(n > 1 for n in target[:lead])
    for i, n in enumerate(target[max(lead, 0):]):
        m, st = vshape[i + max(-lead, 0)], vstride[i + max(-lead, 0)]
        if (m == 1 and n > 1) or (st == 0 and m > 1):
            broadcast = True
    materialised = not broadcast and tuple(vshape) == tuple(target) and mask.is_contiguous()
    dtype = str(mask.dtype).replace("torch.", "")
    kind = "float" if mask.is_floating_point() else dtype
    return (kind, shape, stride, broadcast, materialised)


def _sdpa_args(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, *, scale=None, enable_gqa=False):
    return query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa


def _mha_args(query, key, value, embed_dim, num_head, qkv_weight, qkv_bias, proj_weight, proj_bias,
              mask=None, need_weights=True, average_attn_weights=True, mask_type=None):
    return query, key, embed_dim, num_head, mask, mask_type, need_weights


def _encoder_layer_args(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias, use_gelu,
                        norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2, norm_bias_2, ffn_weight_1,
                        ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None, mask_type=None):
    return src, src, embed_dim, num_heads, mask, mask_type, False


def cpu_allocated_bytes(events):
    """What a profiled CPU call allocated beyond its base: the peak of "Total Allocated" over the
    CPU [memory] events less the total before the first one (attnscope_torch_trace.convert_trace's
    on_cpu computation; the running total persists across profiler sessions)."""
    cpu_mem = [e.get("args", {}) for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"
               and int(e.get("args", {}).get("Device Type", 0)) == 0]
    if not cpu_mem:
        return 0
    base = int(cpu_mem[0]["Total Allocated"]) - int(cpu_mem[0]["Bytes"])
    return max(0, max(int(a["Total Allocated"]) for a in cpu_mem) - base)


class _Call:
    """One recorded call between its setup and its end."""
    __slots__ = ("sig", "op", "cuda", "device", "tensors", "sample", "mode", "prof", "prof_memory", "warn",
                 "caught", "start", "base")


class _Backward:
    """The backward of one recorded call: started by the output's grad_fn pre-hook, ended when all of
    q/k/v's gradients that autograd computes have been (tensor hooks), or when the backward pass ends."""
    __slots__ = ("rec", "sig", "sample", "cuda", "device", "pending", "handles", "t0", "t_last", "start_ev",
                 "end_ev", "base", "peak", "started", "done", "__weakref__")

    def __init__(self, rec, sig, sample, cuda, device):
        self.rec, self.sig, self.sample, self.cuda, self.device = rec, sig, sample, cuda, device
        self.pending = 0
        self.handles = []
        self.t0 = self.t_last = None
        self.start_ev = self.end_ev = None
        self.base = self.peak = None
        self.started = self.done = False

    def start(self, grad_outputs):
        try:
            if self.started or self.done:
                return None
            self.started = True
            with self.rec.lock:
                self.rec.pending_backward.pop(id(self), None)
            torch = self.rec.torch
            if self.cuda:
                torch.cuda.reset_peak_memory_stats(self.device)
                self.base = torch.cuda.memory_allocated(self.device)
                self.start_ev = torch.cuda.Event(enable_timing=True)
                self.start_ev.record()
            self.t0 = time.perf_counter()
            # The end of this backward pass settles a record whose q/k/v gradients were not all asked for.
            torch.autograd.Variable._execution_engine.queue_callback(self.finish)
        except Exception as e:
            self.rec.failed(e)
        return None

    def grad_ready(self, grad):
        try:
            if self.started and not self.done:
                self.t_last = time.perf_counter()
                if self.cuda:
                    torch = self.rec.torch
                    self.end_ev = torch.cuda.Event(enable_timing=True)
                    self.end_ev.record()
                    self.peak = torch.cuda.max_memory_allocated(self.device)
                self.pending -= 1
                if self.pending == 0:
                    self.finish()
        except Exception as e:
            self.rec.failed(e)
        return None

    def finish(self):
        if self.done:
            return
        self.done = True
        self.remove()
        try:
            if self.t_last is None:
                self.rec.count_untracked()
                return
            seconds, nbytes = self.t_last - self.t0, None
            if self.cuda and self.end_ev is not None:
                self.end_ev.synchronize()
                seconds = self.start_ev.elapsed_time(self.end_ev) / 1000.0
                nbytes = max(0, int(self.peak) - int(self.base))
            self.rec.backward_done(self, seconds, nbytes)
        except Exception as e:
            self.rec.failed(e)

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles = []


# ---------------------------------------------------------------------------------------------

class Recorder:
    def __init__(self, out, samples, max_signatures, program):
        self.out = out
        self.samples = samples
        self.max_signatures = max_signatures
        self.program = list(program)
        self.cwd = os.getcwd()
        self.pid = os.getpid()
        self.lock = threading.RLock()
        self.tls = _ThreadState()
        self.torch = None
        self.started_ms = int(time.time() * 1000)
        self.signatures = {}  # key -> _Signature, in first-seen order
        self.calls_seen = 0
        self.calls_dropped = 0
        self.skipped = {}
        self.errors = {}
        self.memory_skipped = 0
        self.backward_untracked = 0
        self.overhead = 0.0
        self.pending_backward = {}  # id -> _Backward not yet started, oldest first
        self.error = ""
        self.exit_code = None
        self.interrupted = False
        self.terminated = False
        self.closed = False  # after the final write, and in a forked child: calls pass straight through
        self.write_failed = False
        self.last_write = 0.0
        self.interval = WRITE_INTERVAL_S
        self.header = {"python": platform.python_version(), "executable": sys.executable, "torch": "",
                       "torch_cuda": "", "torch_cudnn": ""}
        self.cuda_info = None
        self.skip_code = {}  # code object -> True for frames the call site skips
        self.sites = {}  # (filename, line) -> "file.py:LINE"
        self.module_names = {}  # (id(root), id(inner)) -> (ref root, ref inner, name)
        self.op_names = {}  # OpOverload -> its name when it is an attention op, else ""
        self.internal_dirs = ()
        self.trace_dir = None
        self.kineto_started = False
        self.profiler_ok = True
        self.choice_kwargs = (False, False)
        self.plain_types = self.plain_functions = ()
        self.write_lock = threading.RLock()  # one write at a time (threads; a signal during a write)

    # --- setup ----------------------------------------------------------------------------

    def attach(self, torch):
        """Wrap the attention entry points and start keeping the module stack."""
        self.torch = torch
        self.header["torch"] = torch.__version__
        self.header["torch_cuda"] = torch.version.cuda or ""
        try:
            cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        except Exception:
            cudnn = None
        self.header["torch_cudnn"] = str(cudnn) if cudnn else ""
        v = version_tuple(torch.__version__)
        self.choice_kwargs = (v >= (2, 1), v >= (2, 5))  # _fused_sdp_choice's scale, enable_gqa
        dirs = {os.path.dirname(os.path.abspath(torch.__file__)), os.path.dirname(os.path.realpath(torch.__file__)),
                os.path.dirname(os.path.abspath(importlib.util.__file__))}
        self.internal_dirs = tuple(d + os.sep for d in dirs)
        self.is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or (lambda: False)
        self.plain_types = {torch.Tensor, torch.nn.Parameter}
        self.plain_functions = {torch.Tensor.__torch_function__.__func__, torch._C._disabled_torch_function_impl}
        from torch.utils._python_dispatch import TorchDispatchMode
        rec = self

        class AttentionOps(TorchDispatchMode):
            """The aten attention ops one call runs (a dispatch mode sees them below autograd, after
            SDPA's composite has chosen its kernel)."""

            def __init__(self):
                super().__init__()
                self.names = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                name = rec.op_names.get(func)
                if name is None:
                    name = rec.op_names[func] = attention_op_name(func.name())
                if name:
                    self.names.append(name)
                return func(*args, **(kwargs or {}))

        self.AttentionOps = AttentionOps
        F = torch.nn.functional
        wrappers = []
        for owner, op, bind in ((F, SDPA, _sdpa_args), (torch, NATIVE_MHA, _mha_args),
                                (torch, ENCODER_LAYER, _encoder_layer_args)):
            orig = getattr(owner, op, None)
            if orig is None:
                continue
            wrapper = self.make_wrapper(orig, op, bind)
            setattr(owner, op, wrapper)
            wrappers.append((wrapper, "aten::" + op))
        try:
            # TorchScript maps builtins by identity: scripting F.multi_head_attention_forward (an
            # nn.MultiheadAttention) would otherwise try to compile the wrapper and fail.
            from torch.jit._builtins import _register_builtin
            for wrapper, name in wrappers:
                _register_builtin(wrapper, name)
        except Exception as e:
            self.failed(e)
        mod = torch.nn.modules.module
        mod.register_module_forward_pre_hook(self.module_enter)
        try:
            mod.register_module_forward_hook(self.module_exit, always_call=True)
        except TypeError:  # torch 2.0: no always_call (a raising forward leaves its module; see module_name)
            mod.register_module_forward_hook(self.module_exit)
        os.register_at_fork(after_in_child=self.forked)

    def make_wrapper(self, orig, op, bind):
        is_compiling = self.is_compiling
        record = self.sdpa if op == SDPA else self.native

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            # Under torch.compile dynamo traces this function: the check folds to a constant and the
            # graph holds torch's own op.
            if is_compiling():
                return orig(*args, **kwargs)
            return record(wrapper, orig, op, bind, args, kwargs)

        return wrapper

    def forked(self):
        self.closed = True

    def skip(self, reason):
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def failed(self, exc):
        """A failure inside the recorder: counted, the program's call goes on unrecorded."""
        key = first_line(exc)
        with self.lock:
            if key not in self.errors and len(self.errors) >= 20:
                key = "(other errors)"
            self.errors[key] = self.errors.get(key, 0) + 1

    def count_untracked(self):
        with self.lock:
            self.backward_untracked += 1

    # --- module stack ----------------------------------------------------------------------

    def module_enter(self, module, args):
        if not self.is_compiling():
            self.tls.modules.append(module)

    def module_exit(self, module, args, output):
        if self.is_compiling():
            return
        stack = self.tls.modules
        if stack and stack[-1] is module:
            stack.pop()
        else:  # a forward that raised without always_call: drop what it left above itself
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] is module:
                    del stack[i:]
                    break

    def module_name(self):
        stack = self.tls.modules
        if not stack:
            return ""
        root, inner = stack[0], stack[-1]
        key = (id(root), id(inner))
        hit = self.module_names.get(key)
        if hit is not None and hit[0]() is root and hit[1]() is inner:
            return hit[2]
        name = qualified_name(stack)
        if len(self.module_names) > 100000:
            self.module_names.clear()
        try:
            self.module_names[key] = (weakref.ref(root), weakref.ref(inner), name)
        except TypeError:
            pass
        return name

    # --- call site -------------------------------------------------------------------------

    def site(self, frame):
        skip = self.skip_code
        while frame is not None:
            code = frame.f_code
            internal = skip.get(code)
            if internal is None:
                internal = skip[code] = self.is_internal(code.co_filename)
            if not internal:
                break
            frame = frame.f_back
        if frame is None:
            return ""
        key = (frame.f_code.co_filename, frame.f_lineno)
        site = self.sites.get(key)
        if site is None:
            path = os.path.join(self.cwd, key[0])
            if path.startswith(self.cwd.rstrip(os.sep) + os.sep):
                path = os.path.relpath(path, self.cwd)
            site = self.sites[key] = "%s:%d" % (path, key[1])
        return site

    def is_internal(self, filename):
        if filename == _THIS_FILE or filename.startswith(("<frozen runpy", "<frozen importlib")):
            return True
        path = os.path.join(self.cwd, filename)
        return path.startswith(self.internal_dirs) or os.path.basename(path) == "runpy.py"

    # --- recording -------------------------------------------------------------------------

    def passthrough(self, tensors):
        """Why this call is not recorded ("" when it is)."""
        torch = self.torch
        if self.closed:
            return "closed"
        if self.tls.busy:
            return "nested"
        if torch._C._len_torch_dispatch_stack() > 0:
            return "dispatch_mode"
        for t in tensors:
            if not isinstance(t, torch.Tensor):
                return "not_tensors"
        return ""

    def overrides_torch_function(self, objs):
        """Whether any of objs is a tensor subclass (or other object) with its own __torch_function__.
        (torch._C._has_torch_function is also true whenever a torch function mode is on, as under
        torch.set_default_device, whose calls are recorded like any other.)"""
        for t in objs:
            if t is not None and type(t) not in self.plain_types:
                f = getattr(type(t), "__torch_function__", None)
                if f is not None and getattr(f, "__func__", f) not in self.plain_functions:
                    return True
        return False

    def sdpa(self, wrapper, orig, op, bind, args, kwargs):
        t_in = time.perf_counter()
        torch = self.torch
        try:
            q, k, v, mask, dropout_p, is_causal, scale, enable_gqa = bind(*args, **kwargs)
        except TypeError:
            return orig(*args, **kwargs)  # torch says what is wrong with the arguments
        if self.overrides_torch_function((q, k, v, mask)):
            self.skip("torch_function")
            from torch.nn.attention.bias import CausalBias
            if isinstance(mask, CausalBias):
                # CausalBias.__torch_function__ acts on the public name only (the wrapper, now);
                # through the builtin it would take the bias for a plain tensor and get it wrong.
                return torch.overrides.handle_torch_function(wrapper, (q, k, v, mask), *args, **kwargs)
            return orig(*args, **kwargs)  # nested tensors and the like dispatch on the builtin
        reason = self.passthrough((q, k, v))
        if reason:
            self.skip(reason)
            return orig(*args, **kwargs)
        try:
            guard = torch._C.DisableTorchFunction() if torch._C._is_torch_function_mode_enabled() else None
            if guard is not None:  # a mode (torch.set_default_device...) need not see our own calls
                guard.__enter__()
            try:
                qd = (q.shape, q.stride(), q.storage_offset(), q.dtype, q.device, q.is_contiguous())
                capturing = qd[4].type == "cuda" and torch.cuda.is_current_stream_capturing()
                kd = (k.shape, k.stride(), k.storage_offset(), k.dtype, k.device, k.is_contiguous())
                vd = (v.shape, v.stride(), v.storage_offset(), v.dtype, v.device, v.is_contiguous())
                md = mask_desc(mask, tuple(q.shape[:-1]) + (k.shape[-2],)) if mask is not None else NO_MASK
                requires_grad = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
                choice = self.choice(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa)
                key = (op, self.site(sys._getframe(1)), self.module_name(), qd, kd, vd, md, bool(is_causal),
                       scalar(dropout_p), scalar(scale), bool(enable_gqa), requires_grad, choice,
                       self.autocast(qd[4]))
            finally:
                if guard is not None:
                    guard.__exit__(None, None, None)
        except Exception as e:
            self.failed(e)
            return orig(*args, **kwargs)
        if capturing:  # events and synchronisation would break the program's CUDA graph
            self.skip("cuda_graph_capture")
            return orig(*args, **kwargs)
        return self.measure(key, orig, args, kwargs, (q, k, v) if requires_grad else None, t_in)

    def native(self, wrapper, orig, op, bind, args, kwargs):
        t_in = time.perf_counter()
        torch = self.torch
        try:
            query, key_t, embed_dim, num_heads, mask, mask_type, need_weights = bind(*args, **kwargs)
        except TypeError:
            return orig(*args, **kwargs)
        reason = self.passthrough((query, key_t))
        if not reason and self.overrides_torch_function((query, key_t, mask)):
            reason = "torch_function"
        if not reason and query.is_cuda and torch.cuda.is_current_stream_capturing():
            reason = "cuda_graph_capture"
        if reason:
            self.skip(reason)
            return orig(*args, **kwargs)
        try:
            guard = torch._C.DisableTorchFunction() if torch._C._is_torch_function_mode_enabled() else None
            if guard is not None:
                guard.__enter__()
            try:
                key = self.native_key(op, query, key_t, embed_dim, num_heads, mask, mask_type, need_weights)
            finally:
                if guard is not None:
                    guard.__exit__(None, None, None)
        except Exception as e:
            self.failed(e)
            return orig(*args, **kwargs)
        return self.measure(key, orig, args, kwargs, None, t_in)

    def native_key(self, op, query, key_t, embed_dim, num_heads, mask, mask_type, need_weights):
        """The fast paths' attention as SDPA would see it: per-head q/k/v [B, H, L, E/H] (what
        _transform_bias_rescale_qkv makes inside the op), batch-first input [B, L, E]."""
        h = int(num_heads)
        d = int(embed_dim) // h
        nested = query.is_nested

        def lengths(t):
            if t.is_nested:
                sizes = t._nested_tensor_size()
                return sizes.size(0), int(sizes[:, 0].max()) if sizes.size(0) else 0
            return t.shape[0], t.shape[1]

        b, lq = lengths(query)
        _, s = lengths(key_t)
        dtype, device = query.dtype, query.device
        qshape, kshape = (b, h, lq, d), (b, h, s, d)
        qd = (qshape, contiguous_strides(qshape), 0, dtype, device, True)
        kd = (kshape, contiguous_strides(kshape), 0, dtype, device, True)
        view = None
        if mask is not None and mask_type == 1 and mask.dim() == 2:  # key padding [B, S]
            view = ((mask.shape[0], 1, 1, mask.shape[1]), (mask.stride(0), 0, 0, mask.stride(1)))
        md = mask_desc(mask, (b, h, lq, s), view)
        choice = ""
        if not nested and not key_t.is_nested:
            # Views of the inputs with the per-head shapes (no copies): SDPA's choice on the CPU looks
            # at dtypes, shapes and the last stride, which these share with the op's own q/k/v.
            qv = query.view(b, lq, h, d).transpose(1, 2)
            kv = key_t.view(b, s, h, d).transpose(1, 2)
            cmask = mask.view(view[0]) if view is not None else mask
            choice = self.choice(qv, kv, kv, cmask, 0.0, False, None, False)
        extra = (("nested", nested), ("need_weights", bool(need_weights)), ("mask_type", mask_type),
                 ("autocast", self.autocast(device)))
        return (op, self.site(sys._getframe(2)), self.module_name(), qd, kd, kd, md, False, 0.0, None, False,
                False, choice, extra)

    def choice(self, q, k, v, mask, dropout_p, is_causal, scale, enable_gqa):
        kw = {}
        if self.choice_kwargs[0] and scale is not None:
            kw["scale"] = scale
        if self.choice_kwargs[1] and enable_gqa:
            kw["enable_gqa"] = True
        try:
            return CHOICE_NAMES.get(int(self.torch._fused_sdp_choice(q, k, v, mask, dropout_p, is_causal, **kw)),
                                    "unknown")
        except Exception:
            return ""  # no kernel can run these arguments: the call itself will say why

    def autocast(self, device):
        """The autocast dtype in force for the device (None when off): SDPA casts its inputs."""
        torch = self.torch
        try:
            if torch.is_autocast_enabled(device.type):
                return str(torch.get_autocast_dtype(device.type)).replace("torch.", "")
        except TypeError:  # before 2.4: no device argument
            if device.type == "cuda" and torch.is_autocast_enabled():
                return str(torch.get_autocast_gpu_dtype()).replace("torch.", "")
            if device.type == "cpu" and torch.is_autocast_cpu_enabled():
                return str(torch.get_autocast_cpu_dtype()).replace("torch.", "")
        return None

    def new_signature(self, key):
        op, extra = key[0], key[-1]
        notes = []
        if op == SDPA:
            if extra:
                notes.append("autocast (%s) is on: the kernel gets %s inputs; fused_choice was asked "
                             "about the uncast tensors" % (extra, extra))
        else:
            facts = dict(extra)
            if op == NATIVE_MHA:
                notes.append("nn.MultiheadAttention's fast path (torch._native_multi_head_attention): q/k/v "
                             "are the per-head shapes derived from its arguments; time and memory include "
                             "the in and out projections")
                if facts["need_weights"]:
                    notes.append("need_weights=True: the op also computes the attention weights")
            else:
                notes.append("nn.TransformerEncoderLayer's fast path (torch._transformer_encoder_layer_fwd): "
                             "q/k/v are the per-head shapes derived from its arguments; time and memory are "
                             "the whole layer's (projections, attention, feed-forward, norms)")
            if facts["nested"]:
                notes.append("nested tensor input (padding removed): L is the longest sequence")
            if key[12]:
                notes.append("fused_choice: what SDPA would choose for these per-head tensors")
            if facts["autocast"]:
                notes.append("autocast (%s) is on" % facts["autocast"])
        return _Signature(key, notes)

    def measure(self, key, orig, args, kwargs, grad_tensors, t_in):
        torch = self.torch
        with self.lock:
            sig = self.signatures.get(key)
            self.calls_seen += 1
            if sig is None:
                if len(self.signatures) >= self.max_signatures:
                    self.calls_dropped += 1
                else:
                    sig = self.signatures[key] = self.new_signature(key)
        if sig is None:
            self.overhead += time.perf_counter() - t_in
            return orig(*args, **kwargs)
        tls = self.tls
        c = _Call()
        c.sig, c.op, c.tensors = sig, key[0], grad_tensors
        c.device = key[3][4]
        c.cuda = c.device.type == "cuda"
        c.sample = sig.stats.count < self.samples
        c.mode = c.prof = c.warn = c.caught = c.start = c.base = None
        c.prof_memory = False
        tls.busy = True
        try:
            # The first call of a signature shows which kernel ran: SDPA's through the dispatch mode,
            # the fast paths' (one C++ op, which the mode sees whole) through the profiler.
            if sig.ran is None and c.op == SDPA:
                c.mode = self.AttentionOps()
            want_profile = not c.cuda and c.sample
            if want_profile and (torch._C._autograd._profiler_enabled() or not self.can_start_profiler()):
                self.memory_skipped += 1
                want_profile = False
            c.prof_memory = want_profile
            if (sig.ran is None and c.op != SDPA and not torch._C._autograd._profiler_enabled()
                    and self.can_start_profiler()):
                want_profile = True
            if want_profile:
                self.start_profiler(c)
            if c.cuda:
                torch.cuda.reset_peak_memory_stats(c.device)
                c.base = torch.cuda.memory_allocated(c.device)
                c.start = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                c.start[0].record()
            if c.mode is not None:
                c.mode.__enter__()
        except Exception as e:
            self.abandon(c)
            tls.busy = False
            self.failed(e)
            return orig(*args, **kwargs)
        t0 = time.perf_counter()
        try:
            out = orig(*args, **kwargs)
        except BaseException as exc:
            self.end(c, t0, time.perf_counter(), None, exc, t_in)
            raise
        self.end(c, t0, time.perf_counter(), out, None, t_in)
        return out

    def can_start_profiler(self):
        """Kineto must start on the main thread (from another it prints "External init callback must
        run in same thread as registerClient" to stderr, whatever its log level); later, any thread."""
        return self.profiler_ok and (self.kineto_started or threading.current_thread() is threading.main_thread())

    def start_profiler(self, c):
        from torch.profiler import ProfilerActivity, profile
        c.warn = warnings.catch_warnings(record=True)
        c.caught = c.warn.__enter__()
        warnings.simplefilter("always")
        restore = False
        if not self.kineto_started and "KINETO_LOG_LEVEL" not in os.environ:
            # Kineto reads its log level once, when it starts: without this its "profiler_start" and
            # "gpuGetDeviceCount failed" lines would land in the program's stderr.
            os.environ["KINETO_LOG_LEVEL"] = "6"
            restore = True
        try:
            self.profiler_ok = False  # until it has started: a profiler that cannot start is not retried
            c.prof = profile(activities=[ProfilerActivity.CPU], profile_memory=c.prof_memory)
            c.prof.__enter__()
            self.profiler_ok = True
        finally:
            self.kineto_started = True
            if restore:
                del os.environ["KINETO_LOG_LEVEL"]

    def stop_profiler(self, c):
        """(bytes or None, attention op names) of a profiled call; the profiler's own warnings are
        dropped, the call's are passed on as they came."""
        try:
            c.prof.__exit__(None, None, None)
            if self.trace_dir is None:
                self.trace_dir = tempfile.mkdtemp(prefix="attnscope-record-")
            path = os.path.join(self.trace_dir, "trace.json")
            c.prof.export_chrome_trace(path)
            with open(path, "rb") as f:
                events = json.load(f).get("traceEvents", [])
            os.unlink(path)
        finally:
            c.warn.__exit__(None, None, None)
            for w in c.caught:
                if "rofil" not in str(w.message):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
        names = []
        for e in events:
            if e.get("ph") == "X" and e.get("cat") == "cpu_op":
                name = e.get("name", "")
                short = name[6:] if name.startswith("aten::") else name
                if attention_op_name(name) or short in SOFTMAX_OPS:
                    names.append(short)
        return (cpu_allocated_bytes(events) if c.prof_memory else None), names

    def abandon(self, c):
        """Undo a setup that failed half-way (the dispatch mode is entered last: never to undo)."""
        try:
            if c.prof is not None:
                c.prof.__exit__(None, None, None)
            if c.warn is not None:
                c.warn.__exit__(None, None, None)
        except Exception:
            pass

    def end(self, c, t0, t1, out, exc, t_in):
        torch = self.torch
        sig = c.sig
        seconds, nbytes, names = t1 - t0, None, None
        # Each step undoes its own setup, whatever the others did.
        try:
            if c.mode is not None:
                c.mode.__exit__(None, None, None)
                names = c.mode.names
        except Exception as e:
            self.failed(e)
        try:
            if c.cuda:
                c.start[1].record()
                c.start[1].synchronize()
                seconds = c.start[0].elapsed_time(c.start[1]) / 1000.0
                nbytes = max(0, int(torch.cuda.max_memory_allocated(c.device)) - int(c.base))
        except Exception as e:
            self.failed(e)
        try:
            if c.prof is not None:
                profiled_bytes, profiled_names = self.stop_profiler(c)
                if c.prof_memory:
                    nbytes = profiled_bytes
                if names is None:
                    names = profiled_names
        except Exception as e:
            self.failed(e)
        try:
            bwd = None
            with self.lock:
                sig.stats.add(seconds, nbytes)
                if nbytes is not None:
                    sig.memory_method = "cuda_peak" if c.cuda else "profiler"
                sample = None
                if c.sample:
                    sample = [seconds, nbytes, None, None]
                    sig.samples.append(sample)
                if exc is not None:
                    sig.raised_count += 1
                    if not sig.raised:
                        sig.raised = first_line(exc)
                elif sig.ran is None and names is not None:
                    self.set_ran(sig, names)
                if exc is None and c.tensors is not None and isinstance(out, torch.Tensor) and out.grad_fn is not None:
                    bwd = _Backward(self, sig, sample, c.cuda, c.device)
            if bwd is not None:
                self.track_backward(bwd, out, c.tensors)
        except Exception as e:
            self.failed(e)
        finally:
            self.tls.busy = False
        self.overhead += (time.perf_counter() - t_in) - (t1 - t0)
        self.maybe_write()

    def set_ran(self, sig, names):
        seen = []
        for n in names:
            if n not in seen:
                seen.append(n)
        sig.aten_ops = [n for n in seen if n not in SOFTMAX_OPS]
        choice = sig.key[12]
        for n in seen:
            for op, kernel in KERNEL_OPS:
                if n == op:
                    sig.ran = kernel
                    return
        if sig.key[0] != SDPA and any(n in SOFTMAX_OPS for n in seen):
            sig.ran = "math"
            sig.notes.append("the op ran its own bmm + softmax (no SDPA kernel)")
        elif choice == "math":
            sig.ran = "math"
        else:
            sig.ran = ",".join(sig.aten_ops)

    def track_backward(self, bwd, out, tensors):
        if not bwd.sig.grad_fn:
            bwd.sig.grad_fn = out.grad_fn.name()
        unique = []
        for t in tensors:
            if t.requires_grad and all(t is not u for u in unique):
                unique.append(t)
        bwd.handles.append(out.grad_fn.register_prehook(bwd.start))
        for t in unique:
            bwd.handles.append(t.register_hook(bwd.grad_ready))
        bwd.pending = len(unique)
        pending = self.pending_backward
        with self.lock:
            pending[id(bwd)] = bwd
            while len(pending) > MAX_PENDING_BACKWARD:
                oldest = pending.pop(next(iter(pending)))
                oldest.done = True
                oldest.remove()
                self.backward_untracked += 1

    def backward_done(self, bwd, seconds, nbytes):
        sig = bwd.sig
        with self.lock:
            if sig.backward is None:
                sig.backward = _Stats()
            sig.backward.add(seconds, nbytes)
            if bwd.sample is not None:
                bwd.sample[2], bwd.sample[3] = seconds, nbytes
        self.maybe_write()

    def maybe_write(self):
        if time.perf_counter() - self.last_write >= self.interval and not self.closed:
            self.write(final=False)

    # --- output ----------------------------------------------------------------------------

    def cuda_state(self, final):
        """(cuda_available, cuda_devices): asked once the program has initialised CUDA, or at the end;
        asking earlier would start CUDA in a process that may still fork (null until then)."""
        torch = self.torch
        if self.cuda_info is not None:
            return self.cuda_info
        if torch is None:
            return False, []
        if not (final or torch.cuda.is_initialized()):
            return None, []
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ok = torch.version.cuda is not None and torch.cuda.is_available()
                devices = []
                if ok:
                    for i in range(torch.cuda.device_count()):
                        p = torch.cuda.get_device_properties(i)
                        devices.append({"name": p.name, "capability": "%d.%d" % (p.major, p.minor),
                                        "memory": int(p.total_memory)})
        except Exception:
            ok, devices = False, []
        self.cuda_info = (ok, devices)
        return self.cuda_info

    def document(self, final):
        torch = self.torch
        available, devices = self.cuda_state(final)
        threads = None
        if torch is not None:
            try:
                threads = torch.get_num_threads()
            except Exception:
                pass
        doc = {"format": FORMAT, "complete": final, "error": self.error}
        doc.update(self.header)
        doc.update({"cuda_available": available, "cuda_devices": devices, "threads": threads, "cpu_amx": cpu_amx(),
                    "started_unix_ms": self.started_ms, "updated_unix_ms": int(time.time() * 1000),
                    "calls_seen": self.calls_seen, "calls_dropped": self.calls_dropped,
                    "overhead_s": self.overhead, "program": self.program, "cwd": self.cwd,
                    "samples_per_signature": self.samples, "max_signatures": self.max_signatures,
                    "exit_code": self.exit_code, "interrupted": self.interrupted, "terminated": self.terminated,
                    "calls_skipped": dict(self.skipped), "memory_skipped": self.memory_skipped,
                    "backward_untracked": self.backward_untracked,
                    "recorder_errors": [{"error": k, "count": n} for k, n in self.errors.items()],
                    "calls": [s.json() for s in self.signatures.values()]})
        return doc

    def write(self, final):
        """Write FILE atomically; False when it could not be written. A periodic write gives way to
        one under way in another thread."""
        if os.getpid() != self.pid:
            return True
        if not self.write_lock.acquire(blocking=final):
            return True
        try:
            return self.write_file(final)
        finally:
            self.write_lock.release()

    def write_file(self, final):
        t = time.perf_counter()
        with self.lock:
            if self.closed and not final:
                return True
            if final:
                self.closed = True
            data = json.dumps(clean(self.document(final)), ensure_ascii=False, allow_nan=False,
                              separators=(",", ":")).encode("utf-8")
        tmp = self.out + ".tmp"
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.out)
        except OSError as e:
            if not self.write_failed:
                self.write_failed = True
                sys.stderr.write("%s: cannot write %s: %s\n" % (PROG, text(self.out), e.strerror or e))
                sys.stderr.flush()
            return False
        finally:
            self.last_write = time.perf_counter()
            self.interval = max(WRITE_INTERVAL_S, 20 * (self.last_write - t))
        return True

    def finish(self):
        """The final write (launcher's finally or atexit, whichever comes first)."""
        if self.closed:
            return
        self.write(final=True)
        if self.trace_dir is not None:
            try:
                os.rmdir(self.trace_dir)
            except OSError:
                pass

    def on_sigterm(self, signum, frame):
        self.terminated = True
        self.exit_code = -signal.SIGTERM
        self.finish()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def attention_op_name(qualified):
    """"aten::_scaled_dot_product_flash_attention_for_cpu" -> its short name, "" for other ops."""
    short = qualified.split("::", 1)[-1].split(".", 1)[0]
    return short if any(p in short for p in ATTENTION_OP_PARTS) else ""


def qualified_name(stack):
    """The innermost module of `stack` as "RootClass.path.in.named_modules" ("RootClass" when it is
    the root); a module outside the root's tree is named from the nearest module that holds it."""
    inner = stack[-1]
    for outer in stack[:-1]:
        for path, m in outer.named_modules():
            if m is inner:
                return type(outer).__name__ + ("." + path if path else "")
    return type(inner).__name__


# ---------------------------------------------------------------------------------------------
# Running the program as Python would.

def python_name():
    return (getattr(sys, "orig_argv", None) or [sys.executable])[0]


def fresh_main():
    """An empty __main__ for runpy to run in (it runs in sys.modules["__main__"], which is this
    script until then)."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={})
    return main


def run_script(path, args):
    """`python path args`: a source file runs in a new __main__ module with Python's globals (runpy's
    run_path would give sys.argv[0] and __file__ one value, where Python keeps argv[0] as typed and
    makes __file__ absolute); a directory or zip file runs its __main__ as Python runs it, through runpy."""
    import runpy
    full = os.path.join(os.getcwd(), path)
    sys.argv = [path] + list(args)
    if os.path.isdir(full) or zipfile.is_zipfile(full):
        sys.path[0] = path
        sys.modules["__main__"] = fresh_main()
        runpy._run_module_as_main("__main__", alter_argv=False)
        return
    with open(full, "rb") as f:
        source = f.read()
    sys.path[0] = os.path.dirname(os.path.realpath(full))
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=full, __builtins__=builtins, __cached__=None, __annotations__={},
                         __loader__=importlib.machinery.SourceFileLoader("__main__", full))
    if source[:4] == importlib.util.MAGIC_NUMBER:  # a .pyc
        code = marshal.loads(source[16:])
    else:
        code = compile(source, full, "exec", dont_inherit=True)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def run_module(name, args):
    """`python -m name args` through runpy._run_module_as_main, what Python itself calls for -m (its
    messages, sys.argv[0] and traceback lines are Python's), in a fresh __main__ module; runpy's
    public run_module where that is gone."""
    import runpy
    sys.argv = ["-m"] + list(args)
    sys.path[0] = os.getcwd()
    if hasattr(runpy, "_run_module_as_main"):
        sys.modules["__main__"] = fresh_main()
        runpy._run_module_as_main(name, alter_argv=True)
    else:
        runpy.run_module(name, run_name="__main__", alter_sys=True)


def cut_recorder_frames():
    """Make the traceback Python prints for an uncaught exception start in the program, as in
    `python SCRIPT.py` (whatever sys.excepthook the program left does the printing)."""
    hook = sys.excepthook

    def excepthook(etype, value, tb):
        while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
            tb = tb.tb_next
        if value is not None:
            value.__traceback__ = tb
        hook(etype, value, tb)

    sys.excepthook = excepthook


def exit_status(code):
    """What the process exits with for SystemExit(code)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def main(argv):
    try:
        opts, program = parse_args(argv)
    except UsageError as e:
        if str(e):
            sys.stderr.write("%s: %s\n%s\n" % (PROG, e, USAGE))
            return 2
        print(USAGE)
        return 0
    rec = Recorder(os.path.abspath(opts["out"]), opts["samples"], opts["max_signatures"], program)
    if not rec.write(final=False):
        return 2
    if program[0] != "-m":
        full = os.path.join(os.getcwd(), program[0])
        try:
            if not os.path.isdir(full):
                with open(full, "rb"):
                    pass
        except OSError as e:
            msg = "can't open file %r: [Errno %d] %s" % (full, e.errno, e.strerror)
            sys.stderr.write("%s: %s\n" % (python_name(), msg))
            rec.error, rec.exit_code = msg, 2
            rec.finish()
            return 2
    try:
        import torch
        import torch.nn.functional  # noqa: F401  (the wrapped names live here)
    except Exception as e:  # ModuleNotFoundError, or a broken install raising anything
        rec.error = "no torch in %s: %s" % (sys.executable, first_line(e))
    else:
        if version_tuple(torch.__version__) < MIN_TORCH:
            rec.error = "torch %s in %s is too old: AttnScope needs torch 2.0 or newer" % (
                torch.__version__, sys.executable)
            rec.header["torch"] = torch.__version__
    if rec.error:
        sys.stderr.write("%s: %s\n" % (PROG, rec.error))
        rec.exit_code = 3
        rec.finish()
        return 3
    rec.attach(torch)
    atexit.register(rec.finish)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, rec.on_sigterm)
    rec.write(final=False)
    try:
        if program[0] == "-m":
            run_module(program[1], program[2:])
        else:
            run_script(program[0], program[1:])
    except SystemExit as e:
        rec.exit_code = exit_status(e.code)
        raise
    except KeyboardInterrupt:
        # Python prints the traceback, runs atexit, then dies by SIGINT: the same here, once the
        # exception leaves this script.
        rec.interrupted = True
        rec.exit_code = -signal.SIGINT
        cut_recorder_frames()
        raise
    except BaseException:
        rec.exit_code = 1
        cut_recorder_frames()
        raise
    else:
        rec.exit_code = 0
    finally:
        rec.finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
