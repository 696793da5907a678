"""Shared by the torch worker and the recorder (no torch import): text for JSON, the names of
torch's SDPA choices, and the worker's trace: torch.profiler's chrome trace turned into AttnScope's events (kernels,
allocations, phases) on the worker's monotonic clock, and the SDPA kernel that ran."""

# torch._fused_sdp_choice's answer (the SDPBackend enum) by name.
CHOICE_NAMES = {-1: "error", 0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def text(s):
    """A str as valid UTF-8: paths decoded with surrogateescape (a venv under a non-UTF-8 folder)
    would otherwise reach json.dumps as lone surrogates, which no JSON reader accepts."""
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


# The aten ops of SDPA's kernels, first match wins (the CPU flash op before its CUDA namesake).
KERNEL_OPS = [
    ("_scaled_dot_product_flash_attention_for_cpu", "flash"),
    ("_scaled_dot_product_flash_attention", "flash"),
    ("_flash_attention_forward", "flash"),
    ("_scaled_dot_product_efficient_attention", "efficient"),
    ("_efficient_attention_forward", "efficient"),
    ("_scaled_dot_product_cudnn_attention", "cudnn"),
    ("_scaled_dot_product_fused_attention_overrideable", "overrideable"),
    ("_scaled_dot_product_attention_math", "math"),
]


# Ops that only make the memory another op asked for: an allocation inside one is named after the
# op around it (bmm, not empty_strided), as memory_viz names a block by the frame that wanted it.
FACTORY_OPS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "zeros", "zeros_like",
               "new_zeros", "ones", "ones_like", "full", "full_like", "resize_", "scalar_tensor"}


def made_by(ops_by_thread, allocations):
    """For each (tid, ts) of `allocations`, the op that made it: the innermost op running on that
    thread then that is not a mere factory (else the factory itself); None outside every op.
    One walk per thread over its ops by start, keeping the stack of those still open."""
    names = [None] * len(allocations)
    order = sorted(range(len(allocations)), key=lambda i: allocations[i][1])
    cursor, stacks = {}, {}
    for i in order:
        tid, ts = allocations[i]
        spans = ops_by_thread.get(tid, [])
        at, stack = cursor.get(tid, 0), stacks.setdefault(tid, [])
        while at < len(spans) and spans[at][0] <= ts:
            while stack and stack[-1][1] < spans[at][0]:
                stack.pop()
            stack.append(spans[at])
            at += 1
        cursor[tid] = at
        while stack and stack[-1][1] < ts:
            stack.pop()
        if stack:
            names[i] = next((span[2] for span in reversed(stack) if span[2] not in FACTORY_OPS), stack[-1][2])
    return names


def convert_trace(trace, t_start, max_events, phases, inputs, input_bytes, on_cpu):
    """The profiler's chrome trace as AttnScope events on the monotonic clock (t_start: when the
    profiled call began), the kernel that ran, and on the CPU the peak: the inputs (`inputs`,
    (name, tensor) pairs, allocated before the call) plus what the call allocated beyond its base.
    A layer's `phases` replace the call's own range."""
    events = trace.get("traceEvents", [])
    anchor = next((e for e in events if e.get("name") == "attnscope.sdpa" and e.get("ph") == "X"), None)
    offset = t_start - int(anchor["ts"] * 1000) if anchor else t_start
    ns = lambda ts: int(ts * 1000) + offset
    # fixed: the phases and the inputs, always kept; then allocations; then ops, while room is left.
    threads, fixed, allocs, ops, ran, memory = {}, [], [], [], "", []
    # The CPU ops per thread, by start (a parent before its children): what names an allocation.
    ops_by_thread = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "ts" in e and "dur" in e:
            name = e.get("name", "")
            ops_by_thread.setdefault(e.get("tid"), []).append(
                (e["ts"], e["ts"] + e["dur"], name[6:] if name.startswith("aten::") else name))
    for spans in ops_by_thread.values():
        spans.sort(key=lambda span: (span[0], -span[1]))
    alloc_at = []  # (index into allocs, (tid, ts)) of each allocation, for its name
    for e in events:
        ph, cat, name = e.get("ph"), e.get("cat", ""), e.get("name", "")
        if ph == "X" and cat in ("cpu_op", "user_annotation", "kernel", "gpu_memcpy", "gpu_memset"):
            if name == "attnscope.sdpa":
                # A layer's own phases (below) say what the call did; the range only anchors the clock.
                if phases is None:
                    fixed.append({"k": "phase", "n": "profiled sdpa call", "s": ns(e["ts"]), "e": ns(e["ts"] + e["dur"])})
                continue
            short = name[6:] if name.startswith("aten::") else name
            if not ran:
                for op, kernel in KERNEL_OPS:
                    if short == op:
                        ran = kernel
                        break
            gpu = cat != "cpu_op" and cat != "user_annotation"
            key = ("gpu", e.get("args", {}).get("stream", e.get("tid"))) if gpu else ("cpu", e.get("tid"))
            stream = threads.setdefault(key, len(threads))
            ops.append({"k": {"gpu_memcpy": "memcpy", "gpu_memset": "memset"}.get(cat, "kernel"), "n": name,
                        "s": ns(e["ts"]), "e": ns(e["ts"] + e["dur"]), "t": stream, "g": gpu})
        elif ph == "i" and name == "[memory]":
            a = e.get("args", {})
            memory.append(a)
            b = int(a.get("Bytes", 0))
            alloc = {"k": "alloc" if b >= 0 else "free", "s": ns(e["ts"]), "b": abs(b), "a": int(a.get("Addr", 0)),
                     "d": int(a.get("Device Type", 0))}
            if b >= 0:
                alloc_at.append((len(allocs), (e.get("tid"), e["ts"])))
            allocs.append(alloc)
    for (at, _), name in zip(alloc_at, made_by(ops_by_thread, [where for _, where in alloc_at])):
        if name:
            allocs[at]["n"] = name
    fixed += phases or []  # already on the monotonic clock
    # The inputs were allocated before the profiled call; they are live throughout it.
    for name, t in inputs:
        fixed.append({"k": "alloc", "n": name, "s": t_start - 1, "b": t.numel() * t.element_size(),
                      "a": t.data_ptr(), "d": 1 if t.is_cuda else 0})
    # At most max_events in all (AttnScope refuses more): the allocations in time order before
    # the ops, so the memory curve is the last to be cut.
    kept = fixed[:max_events]
    kept += allocs[:max_events - len(kept)]
    kept += ops[:max_events - len(kept)]
    dropped = len(fixed) + len(allocs) + len(ops) - len(kept)
    result = {"events": kept, "ran": ran, "dropped_events": dropped}
    cpu_mem = [a for a in memory if int(a.get("Device Type", 0)) == 0]
    if on_cpu:
        # Reference §6.2: the running total persists across sessions, so subtract the base.
        extra = 0
        if cpu_mem:
            base = int(cpu_mem[0]["Total Allocated"]) - int(cpu_mem[0]["Bytes"])
            extra = max(0, max(int(a["Total Allocated"]) for a in cpu_mem) - base)
        result["peak_bytes"] = input_bytes + extra
    return result
