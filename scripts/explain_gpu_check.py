#!/usr/bin/env python3
"""`attnscope explain`'s prediction next to what torch really does, on a grid that includes the
issue's cliff (model width 64: head_dim 8 and 4) with a boolean mask [1,1,L,L].

For each case: the kernel the explainer predicts and torch._fused_sdp_choice, the predicted extra
bytes (peak minus q, k, v and the mask) and the measured ones (CUDA: max_memory_allocated after
reset_peak_memory_stats, first call and warm; CPU: the profiler's peak), side by side.

  python3 scripts/explain_gpu_check.py --attnscope build-gpu/app/attnscope [--device cuda|cpu] [--quick] [--seqs 256,512]

Run by scripts/gpu-check.sh on a GPU machine; `--device cpu` runs the same comparison on the CPU.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_measure  # noqa: E402

FUSED = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable", -1: "error"}


def grid(quick, seq_list=None):
    seqs = seq_list or ([1024] if quick else [1024, 4096])
    cases = []
    for seq in seqs:
        for heads, width in ((8, 64), (16, 64), (4, 0)):
            for dtype in ("fp16", "bf16", "fp32"):
                for mask in ("dense", "none", "causal"):
                    spec = ["--heads", str(heads), "--seq", str(seq), "--dtype", dtype, "--mask", mask]
                    spec += ["--width", str(width)] if width else ["--head-dim", "64"]
                    cases.append(spec)
    # The cliff at seq 10000: 8 -> 16 heads, fp16, bool mask [1,1,L,L].
    for heads in (() if seq_list else (8, 16)):
        cases.append(["--width", "64", "--heads", str(heads), "--seq", "10000", "--dtype", "fp16", "--mask", "dense"])
    return cases


def target_args(device, threads):
    """The installed torch as explicit options (one lookup here instead of one per case)."""
    import torch
    args = ["--torch", torch.__version__.split("+")[0]]
    if device == "cpu":
        return args + ["--gpu", "cpu", "--threads", str(threads)]
    major, minor = torch.cuda.get_device_capability(0)
    args += ["--gpu", "sm%d%d" % (major, minor), "--cuda", torch.version.cuda.split(".")[0]]
    if torch.backends.cudnn.version():
        args += ["--cudnn", str(torch.backends.cudnn.version())]
    return args


def explain(attnscope, spec, target):
    cmd = [attnscope, "explain", *spec, *target, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("explain failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
    return json.loads(p.stdout)


def measured_case(x, device, threads):
    c = x["call"]  # the SDPA call as the explainer built it (shapes, mask passing, enable_gqa)
    case = {k: c[k] for k in ("B", "H", "Hkv", "L", "S", "D", "dtype", "mask", "mask_shape", "enable_gqa")}
    case.update(device=device, threads=threads)
    return case


def mib(n):
    return "-" if n is None else "%.2f" % (n / 2**20)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--attnscope", required=True, help="path of the attnscope binary")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--quick", action="store_true", help="seq 1024 only (plus the seq-10000 cliff)")
    ap.add_argument("--seqs", help="comma-separated sequence lengths instead of the grid's (no seq-10000 cliff)")
    args = ap.parse_args()
    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch %s sees no CUDA device; nothing to compare (use --device cpu)" % torch.__version__)
        return 0
    threads = torch.get_num_threads()
    where = torch.cuda.get_device_name(0) if args.device == "cuda" else "CPU, %d threads" % threads
    target = target_args(args.device, threads)
    print("torch %s on %s; attnscope explain %s" % (torch.__version__, where, " ".join(target)))
    hdr = "%-40s %-10s %-10s %-5s %12s %12s %12s %9s" % ("case", "predicted", "torch ran", "same", "pred MiB",
                                                          "first MiB", "warm MiB", "warm-pred")
    print(hdr)
    print("-" * len(hdr))
    mismatches = 0
    for spec in grid(args.quick, [int(x) for x in args.seqs.split(",")] if args.seqs else None):
        x = explain(args.attnscope, spec, target)
        pred_kernel = x["chosen"] or "error"
        pred = x.get("memory", {}).get("extra_bytes")
        r = sdpa_measure.run(measured_case(x, args.device, threads))
        c = x["call"]
        label = "H%d L%d D%d %s %s" % (c["H"], c["L"], c["D"], c["dtype"],
                                       "bool%s" % c["mask_shape"] if c["mask"] == "bool_tensor" else c["mask"])
        if "error" in r:
            print("%-40s %-10s %s" % (label[:40], pred_kernel, r["error"][:80]))
            continue
        ran = FUSED.get(r["choice"], str(r["choice"]))
        same = ran == pred_kernel
        mismatches += not same
        warm = r["extra_bytes"]
        print("%-40s %-10s %-10s %-5s %12s %12s %12s %9s" % (
            label[:40], pred_kernel, ran, "yes" if same else "NO", mib(pred), mib(r.get("first_call_extra_bytes")),
            mib(warm), mib(warm - pred) if pred is not None else "-"))
    print("predicted = attnscope explain's peak minus inputs; on CUDA it counts cuBLAS's workspace for math "
          "(first GEMM), which the warm column excludes; cuDNN workspaces and flash split-KV buffers are not predicted.")
    print("kernel mismatches: %d" % mismatches)
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
