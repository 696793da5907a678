#!/usr/bin/env python3
"""Run torch's scaled_dot_product_attention on a list of cases and report, per case, the kernel
torch chose and ran and the memory the call allocated beyond its inputs, forward and (with
requires_grad) backward.

Used by `attnscope_explain_check` (scripts/measure_torch_release.sh, tests/torch_dispatch) on the
CPU and by scripts/gpu-check.sh on CUDA to hold `attnscope explain`'s predictions against a real
torch. Works with every torch 2.x release (2.0 has neither torch.nn.attention nor a CPU
_fused_sdp_choice). Reads a JSON list of cases on stdin, prints one JSON object on stdout:
{"torch": version, "results": [...]}. A case:
  {"id": any, "device": "cpu"|"cuda", "B", "H", "Hkv", "L", "S", "D", "Dv" (default D),
   "dtype": "fp32"|"fp16"|"bf16",
   "mask": "none"|"is_causal"|"causal_lower_right"|"bool_tensor"|"float_tensor", "mask_shape": [..],
   "mask_dtype": "fp32"|"fp16"|"bf16" (float_tensor; default dtype), "enable_gqa": bool,
   "force": null|"math"|"flash"|"efficient"|"cudnn", "threads": int, "requires_grad": bool,
   "trace": bool (adds every allocation with the op that made it)}
A result: {"id", "choice": torch._fused_sdp_choice's integer or null where torch has none,
  "ran": the kernel whose aten op ran ("flash", "efficient", "cudnn", "math"),
  "extra_bytes": the forward's peak beyond what was allocated before it, library scratch (a block
  an op allocates and frees inside itself without an aten op: oneDNN's scratchpad in bf16/fp16
  GEMMs, cpublas's in the CPU flash backward) left out and reported as "scratch_bytes",
  with requires_grad also "kept_bytes" (allocated when the forward returns: its output and what
  autograd saved) and "backward_extra_bytes" (the backward's peak beyond what was allocated when
  it started; grad_output is made by the caller before), or "error"}.
Peak memory (shared reference §6): CPU, the profiler's memory events (peak of the running total
minus its base); CUDA, max_memory_allocated() - memory_allocated() after reset_peak_memory_stats(),
after one warm-up call (so cuBLAS/cuDNN workspaces are excluded and reported separately as
"first_call_extra_bytes"), the kernel that ran from the CPU profiler's op names, and with
requires_grad the same kept and backward figures from the allocator's counters.
"""
import contextlib
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
# The aten op each kernel runs as (substring of the profiler's op name), checked in this order.
KERNEL_OPS = [("flash", "_scaled_dot_product_flash_attention"), ("efficient", "_scaled_dot_product_efficient_attention"),
              ("cudnn", "_scaled_dot_product_cudnn_attention"), ("math", "_scaled_dot_product_attention_math")]


def sdpa_backends():
    try:
        from torch.nn.attention import SDPBackend
        return {"math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}
    except ImportError:
        return {}


def forced(kernel):
    """The context manager that leaves only `kernel` enabled (2.3+: sdpa_kernel; older: sdp_kernel)."""
    if kernel is None:
        return contextlib.nullcontext()
    try:
        from torch.nn.attention import sdpa_kernel
        return sdpa_kernel(sdpa_backends()[kernel])
    except ImportError:
        return torch.backends.cuda.sdp_kernel(enable_flash=kernel == "flash", enable_math=kernel == "math",
                                              enable_mem_efficient=kernel == "efficient")


def make_call(c):
    dev = c["device"]
    dt = DTYPES[c["dtype"]]
    grad = bool(c.get("requires_grad"))
    dv = c.get("Dv", c["D"])
    q = torch.rand(c["B"], c["H"], c["L"], c["D"], dtype=dt, device=dev, requires_grad=grad)
    k = torch.rand(c["B"], c["Hkv"], c["S"], c["D"], dtype=dt, device=dev, requires_grad=grad)
    v = torch.rand(c["B"], c["Hkv"], c["S"], dv, dtype=dt, device=dev, requires_grad=grad)
    kwargs = {}
    if c.get("enable_gqa"):
        kwargs["enable_gqa"] = True
    choice_mask, is_causal = None, False
    if c["mask"] == "is_causal":
        kwargs["is_causal"] = True
        is_causal = True
    elif c["mask"] == "bool_tensor":
        kwargs["attn_mask"] = torch.ones(*c["mask_shape"], dtype=torch.bool, device=dev)
        choice_mask = kwargs["attn_mask"]
    elif c["mask"] == "float_tensor":
        mdt = DTYPES[c.get("mask_dtype") or c["dtype"]]
        kwargs["attn_mask"] = torch.rand(*c["mask_shape"], dtype=mdt, device=dev) * 2 - 1
        choice_mask = kwargs["attn_mask"]
    elif c["mask"] == "causal_lower_right":
        from torch.nn.attention.bias import causal_lower_right
        kwargs["attn_mask"] = causal_lower_right(c["L"], c["S"])
        # What the bias hands to SDPA when it cannot call a fused kernel directly (always on CPU).
        choice_mask = torch.ones(c["L"], c["S"], dtype=torch.bool, device=dev).tril(diagonal=c["S"] - c["L"])
    return q, k, v, kwargs, choice_mask, is_causal


def fused_choice(q, k, v, mask, is_causal, gqa):
    """torch._fused_sdp_choice, or None where this torch has none for the device (CPU in 2.0)."""
    fn = getattr(torch, "_fused_sdp_choice", None)
    if fn is None:
        return None
    args = (q, k, v, mask, 0.0, is_causal)
    try:
        try:
            return int(fn(*args, enable_gqa=gqa))
        except TypeError:
            if gqa:
                raise
            return int(fn(*args))
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def profiled(fn):
    """Runs fn under the CPU profiler; returns (fn's value, memory events, op events)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        value = fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    mem = [e for e in events if e.get("name") == "[memory]"]
    ops = [e for e in events if e.get("ph") == "X" and "dur" in e]
    return value, mem, ops


# Ops whose own allocation is a tensor they return (a block made and freed inside one of them is
# not scratch).
ALLOCATING_OPS = ("aten::empty", "aten::new_empty", "aten::zeros", "aten::ones", "aten::full", "aten::scalar_tensor")


def innermost(ts, ops):
    inner = None
    for o in ops:
        if o["ts"] <= ts <= o["ts"] + o["dur"] and (inner is None or o["dur"] < inner["dur"]):
            inner = o
    return inner


def library_scratch(mem, ops):
    """Indices of the memory events of library scratch: a block allocated and freed inside one
    call of one op with no aten op of its own around the allocation (oneDNN's scratchpad in a
    bf16/fp16 GEMM, cpublas's inside the CPU flash backward). It depends on the CPU and the
    library build, not on torch's code, so explain does not model it; it is left out of the peaks
    and reported on its own ("scratch_bytes")."""
    scratch = set()
    open_blocks = {}
    for i, e in enumerate(mem):
        a = e["args"]
        addr = a.get("Addr")
        if a["Bytes"] > 0:
            open_blocks[addr] = i
        elif addr in open_blocks:
            j = open_blocks.pop(addr)
            op_alloc, op_free = innermost(mem[j]["ts"], ops), innermost(e["ts"], ops)
            if op_alloc is not None and op_alloc is op_free and not op_alloc["name"].startswith(ALLOCATING_OPS):
                scratch.update((i, j))
    return scratch


def peak_of(mem, ops):
    """(peak beyond the base, allocated at the end beyond the base, largest library scratch) of one
    profiler session, library scratch left out."""
    if not mem:
        return 0, 0, 0
    scratch = library_scratch(mem, ops)
    total, peak, live_scratch, most_scratch = 0, 0, 0, 0
    for i, e in enumerate(mem):
        b = e["args"]["Bytes"]
        if i in scratch:
            live_scratch += b
            most_scratch = max(most_scratch, live_scratch)
        else:
            total += b
            peak = max(peak, total)
    return peak, total, most_scratch


def kernel_ran(ops):
    names = {e["name"] for e in ops}
    for kernel, op in KERNEL_OPS:
        if any(op in n for n in names):
            return kernel
    return "math"  # 2.0 and some paths run the math ops inline


def trace_of(mem, ops):
    """Each allocation or free with the innermost op around it: [op, bytes, running total]."""
    out = []
    for e in mem:
        inner = innermost(e["ts"], ops)
        out.append([inner["name"] if inner else "", e["args"]["Bytes"], e["args"]["Total Allocated"]])
    return out


def cuda_peak(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def ops_of(fn):
    """fn's value and the op events of one call under the CPU profiler (no memory events: on
    CUDA the allocator's counters give the peaks)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        value = fn()
    return value, [{"name": e.name} for e in prof.events()]


def run_cuda(c, res, q, k, v, call):
    """Peaks from the caching allocator: the first call apart (cuBLAS/cuDNN workspaces), then a
    warm call; with requires_grad also what the forward leaves allocated (kept) and the
    backward's peak beyond what was allocated when it started."""
    grad = bool(c.get("requires_grad"))
    res["first_call_extra_bytes"] = cuda_peak(call)
    if grad:
        out = call()
        out.backward(torch.ones_like(out))
        for t in (q, k, v):
            t.grad = None
        del out
    _, ops = ops_of(call)
    res["ran"] = kernel_ran(ops)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = call()
    torch.cuda.synchronize()
    res["extra_bytes"] = torch.cuda.max_memory_allocated() - base
    if grad:
        res["kept_bytes"] = torch.cuda.memory_allocated() - base
        g = torch.ones_like(out)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = torch.cuda.memory_allocated()
        out.backward(g)
        torch.cuda.synchronize()
        res["backward_extra_bytes"] = torch.cuda.max_memory_allocated() - start
    del out


def run_cpu(c, res, q, k, v, call):
    grad = bool(c.get("requires_grad"))

    def step():  # warm-up outside the profiler: forward and backward
        out = call()
        if grad:
            out.backward(torch.ones_like(out))
            for t in (q, k, v):
                t.grad = None
        return out

    step()
    out, mem, ops = profiled(call)
    res["extra_bytes"], kept, res["scratch_bytes"] = peak_of(mem, ops)
    res["ran"] = kernel_ran(ops)
    if c.get("trace"):
        res["trace"] = trace_of(mem, ops)
    if grad:
        res["kept_bytes"] = kept
        g = torch.ones_like(out)
        _, bmem, bops = profiled(lambda: out.backward(g))
        res["backward_extra_bytes"], _, scratch = peak_of(bmem, bops)
        res["scratch_bytes"] = max(res["scratch_bytes"], scratch)
        if c.get("trace"):
            res["backward_trace"] = trace_of(bmem, bops)


def run(c):
    res = {"id": c.get("id")}
    if c.get("threads"):
        torch.set_num_threads(int(c["threads"]))
    try:
        q, k, v, kwargs, choice_mask, is_causal = make_call(c)
        res["choice"] = fused_choice(q, k, v, choice_mask, is_causal, bool(c.get("enable_gqa")))
        call = lambda: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
        with forced(c.get("force")):
            if c["device"] == "cuda":
                run_cuda(c, res, q, k, v, call)
            else:
                run_cpu(c, res, q, k, v, call)
    except Exception as e:  # a forced kernel that cannot run, an OOM: reported per case
        res["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if c["device"] == "cuda":
            torch.cuda.empty_cache()
    return res


def main():
    import warnings
    warnings.filterwarnings("ignore")  # the profiler's and old releases' warnings go to stderr
    cases = json.load(sys.stdin)
    out = []
    for i, c in enumerate(cases):
        out.append(run(c))
        if sys.stderr.isatty() and i % 50 == 49:
            print("sdpa_measure: %d/%d" % (i + 1, len(cases)), file=sys.stderr)
    json.dump({"torch": torch.__version__, "results": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
