#!/usr/bin/env python3
"""torch's scaled_dot_product_attention backends on the same grid as bench_cuda, for a side by
side comparison: time (median of CUDA-event timings), TFLOP/s by the same formula (4 B H L^2 D,
halved for causal) and peak memory (max_memory_allocated over the call, inputs included, as
AttnScope counts it). Run by scripts/gpu-check.sh; printed, never asserted."""
import argparse
import warnings
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError as e:  # the script is optional where torch is missing
    print(f"bench_torch_sdpa: torch unavailable ({e}); skipped", file=sys.stderr)
    sys.exit(0)


def fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.2f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024.0


def fmt_time(s):
    return f"{s * 1e6:.1f} us" if s < 1e-3 else (f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s")


def run(backend, b, h, l, d, dtype, causal, warmup, reps):
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.rand((b, h, l, d), device="cuda", dtype=dtype, generator=g) * 2 - 1
    k = torch.rand((b, h, l, d), device="cuda", dtype=dtype, generator=g) * 2 - 1
    v = torch.rand((b, h, l, d), device="cuda", dtype=dtype, generator=g) * 2 - 1
    times = []
    with sdpa_kernel([backend]):
        for i in range(warmup + reps):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            stop.record()
            stop.synchronize()
            if i >= warmup:
                times.append(start.elapsed_time(stop) * 1e-3)
            del out
    peak = torch.cuda.max_memory_allocated() - base
    del q, k, v
    return statistics.median(times), peak


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--seq", default="1024,4096,16384")
    ap.add_argument("--head-dim", default="64,128")
    ap.add_argument("--mask", default="none,causal")
    ap.add_argument("--dtype", default="fp16,bf16")
    ap.add_argument("--backends", default="flash,efficient,cudnn,math")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")  # "no available kernel" warnings: the status column says it
    if not torch.cuda.is_available():
        print("bench_torch_sdpa: torch sees no CUDA device; skipped", file=sys.stderr)
        return 0
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
                "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}
    dtypes = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
    print(f"torch {torch.__version__} SDPA on {torch.cuda.get_device_name()} (CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}); B={a.batch} H={a.heads}; median of {a.reps} reps after {a.warmup} warm-up")
    print(f"{'backend':<15} {'dtype':<5} {'D':>4} {'mask':<7} {'seq':>6} {'time':>11} {'TFLOP/s':>9} {'peak':>11} status")
    for dt in a.dtype.split(","):
        for d in map(int, a.head_dim.split(",")):
            for m in a.mask.split(","):
                for l in map(int, a.seq.split(",")):
                    causal = m == "causal"
                    flops = 4.0 * a.batch * a.heads * l * l * d * (0.5 if causal else 1.0)
                    for name in a.backends.split(","):
                        label = "torch." + name
                        try:
                            t, peak = run(backends[name], a.batch, a.heads, l, d, dtypes[dt], causal, a.warmup, a.reps)
                            print(f"{label:<15} {dt:<5} {d:>4} {m:<7} {l:>6} {fmt_time(t):>11} {flops / t * 1e-12:>9.1f} "
                                  f"{fmt_bytes(peak):>11} ok", flush=True)
                        except Exception as e:  # unsupported combination, OOM: report and go on
                            msg = str(e).strip().splitlines()[0][:100] if str(e).strip() else type(e).__name__
                            print(f"{label:<15} {dt:<5} {d:>4} {m:<7} {l:>6} {'-':>11} {'-':>9} {'-':>11} "
                                  f"{type(e).__name__}: {msg}", flush=True)
                            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
