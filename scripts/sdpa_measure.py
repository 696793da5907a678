#!/usr/bin/env python3
"""Run torch's scaled_dot_product_attention on a list of cases and report, per case, the kernel
torch chose (torch._fused_sdp_choice) and the peak memory the call allocated beyond its inputs.

Used by tests/torch_dispatch/test_explain_torch.cpp (CPU) and scripts/gpu-check.sh (CUDA) to hold
`attnscope explain`'s predictions against the real torch. Reads a JSON list of cases on stdin,
prints one JSON list on stdout. A case:
  {"id": any, "device": "cpu"|"cuda", "B", "H", "Hkv", "L", "S", "D", "dtype": "fp32"|"fp16"|"bf16",
   "mask": "none"|"is_causal"|"causal_lower_right"|"bool_tensor", "mask_shape": [..],
   "enable_gqa": bool, "force": null|"math"|"flash"|"efficient"|"cudnn", "threads": int}
Peak memory (shared/reference/torch-sdpa.md §6): CPU, the profiler's memory events (peak of the
running total minus its base); CUDA, max_memory_allocated() - memory_allocated() after
reset_peak_memory_stats(), after one warm-up call (so cuBLAS/cuDNN workspaces are excluded and
reported separately as "first_call_extra_bytes").
"""
import json
import os
import sys
import tempfile

import torch
import torch.nn.functional as F

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


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
        import contextlib
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
    q = torch.rand(c["B"], c["H"], c["L"], c["D"], dtype=dt, device=dev)
    k = torch.rand(c["B"], c["Hkv"], c["S"], c["D"], dtype=dt, device=dev)
    v = torch.rand(c["B"], c["Hkv"], c["S"], c["D"], dtype=dt, device=dev)
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
    elif c["mask"] == "causal_lower_right":
        from torch.nn.attention.bias import causal_lower_right
        kwargs["attn_mask"] = causal_lower_right(c["L"], c["S"])
        # What the bias hands to SDPA when it cannot call a fused kernel directly (always on CPU).
        choice_mask = torch.ones(c["L"], c["S"], dtype=torch.bool, device=dev).tril(diagonal=c["S"] - c["L"])
    return q, k, v, kwargs, choice_mask, is_causal


def cpu_peak(fn):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    finally:
        os.unlink(path)
    mem = [e["args"] for e in events if e.get("name") == "[memory]"]
    if not mem:
        return 0
    base = mem[0]["Total Allocated"] - mem[0]["Bytes"]
    return max(a["Total Allocated"] for a in mem) - base


def cuda_peak(fn):
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    del out
    return peak


def run(c):
    res = {"id": c.get("id")}
    if c.get("threads"):
        torch.set_num_threads(int(c["threads"]))
    try:
        q, k, v, kwargs, choice_mask, is_causal = make_call(c)
        extra = (q, k, v, choice_mask, 0.0, is_causal)
        try:
            res["choice"] = torch._fused_sdp_choice(*extra, enable_gqa=bool(c.get("enable_gqa")))
        except TypeError:
            res["choice"] = torch._fused_sdp_choice(*extra)
        call = lambda: F.scaled_dot_product_attention(q, k, v, **kwargs)  # noqa: E731
        with forced(c.get("force")):
            if c["device"] == "cuda":
                res["first_call_extra_bytes"] = cuda_peak(call)
                res["extra_bytes"] = cuda_peak(call)
            else:
                call()  # warm-up outside the profiler
                res["extra_bytes"] = cpu_peak(call)
    except Exception as e:  # a forced kernel that cannot run, an OOM: reported per case
        res["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if c["device"] == "cuda":
            torch.cuda.empty_cache()
    return res


def main():
    cases = json.load(sys.stdin)
    out = [run(c) for c in cases]
    json.dump({"torch": torch.__version__, "results": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
