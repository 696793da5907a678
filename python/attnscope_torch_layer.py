"""kind = layer for AttnScope's torch worker (imported by attnscope_torch_worker.py, which sits in
the same folder): a multi-head attention layer built from torch's own ops, as a model would be.

  qkv = F.linear(x, w_qkv, b_qkv)                 x [B,L,E], w_qkv [(H + 2 Hkv) D, E]
  q, k, v = split(qkv)                            rows: H*D query rows, then Hkv*D key, Hkv*D value
  o = scaled_dot_product_attention(q, k, v, ...)  the backend's forced kernel, mask and GQA
  y = F.linear(merge(o), w_o, b_o)                w_o [E, H D]

pass train: loss = sum(y * G), one y.backward(G) through autograd; the gradients are the leaves'
.grad. checkpoint attention: the attention alone runs under torch.utils.checkpoint.

Phases are host ranges on time.monotonic_ns(), the clock the worker's trace is moved onto:
qkv_proj, attention, out_proj in the forward; in the backward, hooks on the tensors between the
stages mark where autograd's engine reaches them (out_proj_backward until merge(o)'s gradient
is about to be used, attention_backward until q's, k's and v's are, then qkv_proj_backward);
a checkpoint's recompute is a range inside attention_backward. The profiled call records them
(on CUDA it synchronises at each boundary so the ranges hold the GPU's work), and so do the timed
calls on the CPU, where an op has finished when it returns.
"""

import contextlib
import os
import time

import torch
import torch.nn.functional as F

INPUTS = ("x", "w_qkv", "b_qkv", "w_o", "b_o")
GRADIENTS = ("dx", "dw_qkv", "db_qkv", "dw_o", "db_o")
# What the float64 check holds each stage against (AttnScope's LayerIntermediates).
INTERMEDIATES = ("q", "k", "v", "o")
INTERMEDIATE_GRADIENTS = ("d_o", "dq", "dk", "dv")


class Layer:
    """The layer's tensors and call; `attention` is the worker's Workload (its sdpa() call, mask,
    kernel and GQA handling are the attention kind's, unchanged)."""

    def __init__(self, spec, load, attention):
        self.w = attention
        self.heads, self.kv_heads, self.head_dim = spec["heads"], spec["kv_heads"], spec["head_dim"]
        self.tensors = {name: load(name + ".npy") for name in INPUTS}
        self.phases = None  # a list while the profiled call records its phases
        self.in_backward = False
        self.grads = None
        self.kept = None

    def input_tensors(self):
        return [(name, self.tensors[name]) for name in INPUTS]

    def project(self, x, w_qkv, b_qkv):
        """q [B,H,L,D], k and v [B,Hkv,L,D]: views of the projection, heads split as the contract says."""
        qkv = F.linear(x, w_qkv, b_qkv)
        b, l, _ = qkv.shape
        hd, kvd = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, k, v = qkv.split([hd, kvd, kvd], dim=-1)
        heads = lambda t, h: t.reshape(b, l, h, self.head_dim).transpose(1, 2)
        return heads(q, self.heads), heads(k, self.kv_heads), heads(v, self.kv_heads)

    def attend(self, q, k, v):
        # Under checkpoint this runs again inside the backward: that run is the recompute.
        with self.phase("recompute") if self.in_backward else contextlib.nullcontext():
            if self.w.q_factor != 1.0:
                q = q * self.w.q_factor  # torch 2.0: the scale folded into q (no scale argument)
            return self.w.sdpa(q, k, v)

    @contextlib.contextmanager
    def phase(self, name):
        if self.phases is None:
            yield
            return
        self.w.synchronize()
        start = time.monotonic_ns()
        try:
            yield
        finally:
            self.w.synchronize()
            self.phases.append({"k": "phase", "n": name, "s": start, "e": time.monotonic_ns()})

    def call(self, keep=False):
        """One forward (and backward for train). keep: also keep q, k, v, o and their gradients
        for the accuracy check (an extra, unprofiled call: keeping them would change the peak)."""
        t = self.tensors
        leaves = {n: t[n].detach().requires_grad_() if self.w.train else t[n] for n in INPUTS}
        with self.phase("qkv_proj"):
            q, k, v = self.project(leaves["x"], leaves["w_qkv"], leaves["b_qkv"])
        with self.phase("attention"):
            if self.w.checkpoint:
                from torch.utils.checkpoint import checkpoint
                o = checkpoint(self.attend, q, k, v, use_reentrant=False)
            else:
                o = self.attend(q, k, v)
        with self.phase("out_proj"):
            b, h, l, d = o.shape
            merged = o.transpose(1, 2).reshape(b, l, h * d)
            y = F.linear(merged, leaves["w_o"], leaves["b_o"])
        if keep:
            self.kept = {"q": q, "k": k, "v": v, "o": o}
            for name in ("q", "k", "v", "o"):
                if self.w.train:
                    self.kept[name].retain_grad()
        if self.w.train:
            self.backward(y, merged, (q, k, v))
            self.grads = tuple(leaves[n].grad for n in INPUTS)
            if keep:
                self.kept.update({"d" + n if n != "o" else "d_o": self.kept[n].grad for n in ("q", "k", "v", "o")})
        return y.detach()

    def backward(self, y, merged, qkv):
        if self.phases is None:
            y.backward(self.w.g)
            return
        # Boundaries from hooks: a tensor's hook runs when autograd is about to use its gradient,
        # i.e. once every node after it in the forward has run.
        marks = {}
        merged.register_hook(lambda g: self.mark(marks, "out", 1))
        for t in qkv:
            t.register_hook(lambda g: self.mark(marks, "attention", 3))
        self.in_backward = True
        self.w.synchronize()
        start = time.monotonic_ns()
        try:
            y.backward(self.w.g)
            self.w.synchronize()
        finally:
            self.in_backward = False
        end = time.monotonic_ns()
        out_end = marks.get("out", end)
        att_end = marks.get("attention", end)
        self.phases += [{"k": "phase", "n": n, "s": s, "e": e} for n, s, e in (
            ("out_proj_backward", start, out_end), ("attention_backward", out_end, att_end),
            ("qkv_proj_backward", att_end, end))]
        self.phases.sort(key=lambda p: p["s"])

    def mark(self, marks, name, count):
        # Several tensors may end one stage: it ends when the last of them is reached.
        seen = marks.setdefault(name + "#", 0) + 1
        marks[name + "#"] = seen
        if seen == count:
            self.w.synchronize()
            marks[name] = time.monotonic_ns()

    def choice_tensors(self):
        """q, k, v as the call passes them to SDPA, for torch._fused_sdp_choice."""
        with torch.no_grad():
            t = self.tensors
            return self.project(t["x"], t["w_qkv"], t["b_qkv"])

    def write_gradients(self, folder, write_npy):
        for name, grad in zip(GRADIENTS, self.grads):
            write_npy(os.path.join(folder, name + ".npy"), grad)

    def write_intermediates(self, folder, write_npy):
        """One more call keeping the stages' tensors; writes mid_<name>.npy for each."""
        self.call(keep=True)
        names = INTERMEDIATES + (INTERMEDIATE_GRADIENTS if self.w.train else ())
        try:
            for name in names:
                write_npy(os.path.join(folder, "mid_" + name + ".npy"), self.kept[name])
        finally:
            self.kept = None
            self.grads = None
        return list(names)
