"""kind = layer for AttnScope's torch worker (imported by attnscope_torch_worker.py, which sits in
the same folder): a stack of `layers` multi-head attention layers built from torch's own ops, as a
model would be, each with its own weights (layer 1's in w_qkv.npy ..., layer n's in Ln.w_qkv.npy):

  h = x; for each layer: h = layer(h); y = h
  layer(h):
    qkv = F.linear(h, w_qkv, b_qkv)                 h [B,L,E], w_qkv [(H + 2 Hkv) D, E]
    q, k, v = split(qkv)                            rows: H*D query rows, then Hkv*D key, Hkv*D value
    o = scaled_dot_product_attention(q, k, v, ...)  the backend's forced kernel, mask and GQA
    return F.linear(merge(o), w_o, b_o)             w_o [E, H D]

pass train: loss = sum(y * G), one y.backward(G) through autograd; the gradients are the leaves'
.grad. checkpoint attention: each layer's attention alone runs under torch.utils.checkpoint;
checkpoint layer: each layer's whole forward does (it keeps its input; its backward runs the
forward again first). tp > 1: this process is one rank and holds its heads' share of each layer
(attnscope_torch_tp.py: the slices, the collectives and their autograd).

Phases are host ranges on time.monotonic_ns(), the clock the worker's trace is moved onto:
qkv_proj, attention, out_proj (and comm under tp) in the forward; in the backward, hooks on the
tensors between the stages mark where autograd's engine reaches them (out_proj_backward until
merge(o)'s gradient is about to be used, attention_backward until q's, k's and v's are, then
qkv_proj_backward, then under tp the all_reduce of the input's gradient, comm); a checkpoint's
recompute is a range of its own (inside attention_backward for checkpoint attention, before
out_proj_backward for checkpoint layer, holding the layer's forward phases). In a stack each
layer's phases sit inside an "L<n>" range, in the forward and again in its backward (which runs
from when the gradient of the layer's output is about to be used to when its input's is), as
the CPU backends' do. The profiled call records them (on CUDA it synchronises at each boundary
so the ranges hold the GPU's work), and so do the timed calls on the CPU, where an op has
finished when it returns.
"""

import contextlib
import os
import time

import torch
import torch.nn.functional as F

WEIGHTS = ("w_qkv", "b_qkv", "w_o", "b_o")
# What the float64 check holds each stage against (AttnScope's LayerIntermediates).
INTERMEDIATES = ("q", "k", "v", "o")
INTERMEDIATE_GRADIENTS = ("d_o", "dq", "dk", "dv")


def layer_file(layer, name):
    """The file of layer `layer`'s (0-based) tensor: the name itself for layer 0, L<n>.name deeper
    (core/inputs/run_files.h layerFileName)."""
    return name if layer == 0 else "L%d.%s" % (layer + 1, name)


class Layer:
    """The stack's tensors and call; `attention` is the worker's Workload (its sdpa() call, mask,
    kernel and GQA handling are the attention kind's, unchanged); `tp` this rank's place, or None."""

    def __init__(self, spec, load, attention, tp=None):
        self.w = attention
        self.tp = tp
        world = tp.world if tp is not None else 1
        # This rank's heads (all of them without tp).
        self.heads, self.kv_heads, self.head_dim = spec["heads"] // world, spec["kv_heads"] // world, spec["head_dim"]
        self.count = int(spec.get("layers", 1))
        self.checkpoint = spec.get("checkpoint", "none") if attention.train else "none"
        self.gather = tp is not None and tp.comm == "gather"
        self.x = load("x.npy")
        self.weights = [self.load_weights(spec, load, l) for l in range(self.count)]
        self.phases = None  # a list while a call records its phases
        self.marks = None   # per layer, the backward's boundaries while recording
        self.in_backward = False
        self.grads = None
        self.kept = None
        if tp is not None:
            tp.recorder = self

    def load_weights(self, spec, load, layer):
        t = {name: load(layer_file(layer, name + ".npy")) for name in WEIGHTS}
        if self.tp is not None:
            h, hkv, d = spec["heads"], spec["kv_heads"], spec["head_dim"]
            t["w_qkv"] = self.tp.qkv_rows(t["w_qkv"], h, hkv, d)
            t["b_qkv"] = self.tp.qkv_rows(t["b_qkv"], h, hkv, d)
            t["w_o"] = self.tp.o_cols(t["w_o"], h, d)
        return t

    def input_tensors(self):
        out = [("x", self.x)]
        for l, t in enumerate(self.weights):
            out += [(layer_file(l, name), t[name]) for name in WEIGHTS]
        return out

    def project(self, x, w_qkv, b_qkv):
        """q [B,H,L,D], k and v [B,Hkv,L,D]: views of the projection, heads split as the contract says."""
        qkv = F.linear(x, w_qkv, b_qkv)
        b, l, _ = qkv.shape
        hd, kvd = self.heads * self.head_dim, self.kv_heads * self.head_dim
        q, k, v = qkv.split([hd, kvd, kvd], dim=-1)
        heads = lambda t, h: t.reshape(b, l, h, self.head_dim).transpose(1, 2)
        return heads(q, self.heads), heads(k, self.kv_heads), heads(v, self.kv_heads)

    def attend(self, q, k, v):
        # Under checkpoint attention this runs again inside the backward: that run is the recompute.
        again = self.in_backward and self.checkpoint == "attention"
        with self.phase("recompute") if again else contextlib.nullcontext():
            if self.w.q_factor != 1.0:
                q = q * self.w.q_factor  # torch 2.0: the scale folded into q (no scale argument)
            return self.w.sdpa(q, k, v)

    def now(self):
        self.w.synchronize()
        return time.monotonic_ns()

    @contextlib.contextmanager
    def phase(self, name):
        if self.phases is None:
            yield
            return
        start = self.now()
        try:
            yield
        finally:
            self.phases.append({"k": "phase", "n": name, "s": start, "e": self.now()})

    def layer_forward(self, l, h):
        """Layer l on its input h. Under checkpoint layer this runs again in the backward: the
        recompute, whose hooks and kept tensors are the first run's."""
        if not self.in_backward:
            return self.layer_body(l, h, True)
        if self.phases is None:
            return self.layer_body(l, h, False)
        start = self.now()
        try:
            return self.layer_body(l, h, False)
        finally:
            end = self.now()
            self.phases.append({"k": "phase", "n": "recompute", "s": start, "e": end})
            self.marks[l]["recompute"] = (start, end)

    def layer_body(self, l, h, first):
        w = self.leaves[l]
        tp = self.tp
        with self.phase("qkv_proj"):
            h_in = tp.copy_in(h, l) if tp is not None else h
            q, k, v = self.project(h_in, w["w_qkv"], w["b_qkv"])
        with self.phase("attention"):
            if self.checkpoint == "attention":
                from torch.utils.checkpoint import checkpoint
                o = checkpoint(self.attend, q, k, v, use_reentrant=False)
            else:
                o = self.attend(q, k, v)
        b, heads, n, d = o.shape
        if self.gather:
            with self.phase("comm"):
                gathered = tp.gather_heads(o)  # [N, B, H/N, L, D], rank-major: the heads in order
        with self.phase("out_proj"):
            if self.gather:
                merged = gathered.permute(1, 3, 0, 2, 4).reshape(b, n, -1)
            else:
                merged = o.transpose(1, 2).reshape(b, n, heads * d)
            # allreduce: the ranks' partial products are summed; b_o is added once, by rank 0's.
            bias = w["b_o"] if tp is None or self.gather or tp.rank == 0 else None
            y = F.linear(merged, w["w_o"], bias)
        if tp is not None and not self.gather:
            with self.phase("comm"):
                y = tp.reduce_out(y)
        if first and self.kept is not None:
            kept = self.kept[l]
            kept.update({"q": q, "k": k, "v": v, "o": o})
            if self.w.train:
                for name in INTERMEDIATES:
                    kept[name].retain_grad()
        if first and self.w.train and self.phases is not None:
            # Boundaries from hooks: a tensor's hook runs when autograd is about to use its
            # gradient, i.e. once every node after it in the forward has run.
            merged.register_hook(lambda g: self.mark(l, "out", 1))
            for t in (q, k, v):
                t.register_hook(lambda g: self.mark(l, "attention", 3))
        return y

    def call(self, keep=False):
        """One forward (and backward for train). keep: also keep each layer's input, q, k, v, o
        and their gradients for the accuracy check (an extra, unprofiled call: keeping them would
        change the peak)."""
        train = self.w.train
        x = self.x.detach().requires_grad_() if train else self.x
        self.leaves = [{n: t[n].detach().requires_grad_() if train else t[n] for n in WEIGHTS} for t in self.weights]
        self.marks = [{} for _ in range(self.count)]
        self.kept = [{} for _ in range(self.count)] if keep else None
        h = x
        try:
            for l in range(self.count):
                if keep and l > 0:
                    self.kept[l]["x"] = h
                    if train:
                        h.retain_grad()
                with self.phase("L%d" % (l + 1)) if self.count > 1 else contextlib.nullcontext():
                    if self.checkpoint == "layer":
                        from torch.utils.checkpoint import checkpoint
                        h = checkpoint(self.layer_forward, l, h, use_reentrant=False)
                    else:
                        h = self.layer_forward(l, h)
                if train and self.phases is not None and l < self.count - 1:
                    # Layer l's backward begins when its output's gradient is about to be used.
                    h.register_hook(lambda g, l=l: self.mark(l, "start", 1))
            y = h
            del h
            if train:
                self.backward(y)
                self.grads = {"dx": x.grad}
                for l, t in enumerate(self.leaves):
                    for name in WEIGHTS:
                        self.grads[layer_file(l, "d" + name)] = t[name].grad
                if keep:
                    for l, kept in enumerate(self.kept):
                        kept.update({"d" + n if n != "o" else "d_o": kept[n].grad for n in INTERMEDIATES})
                        if l > 0:
                            kept["dx"] = kept["x"].grad
            return y.detach()
        finally:
            self.leaves = None

    def backward(self, y):
        if self.phases is None:
            y.backward(self.w.g)
            return
        self.in_backward = True
        start = self.now()
        try:
            y.backward(self.w.g)
            self.w.synchronize()
        finally:
            self.in_backward = False
        end = time.monotonic_ns()
        # The last layer's backward starts with the backward; layer l's ends where layer l - 1's
        # starts (its input is that layer's output), the first layer's with the backward.
        begins = [self.marks[l].get("start", start) for l in range(self.count - 1)] + [start]
        for l in range(self.count):
            self.phases += self.backward_phases(l, begins[l], begins[l - 1] if l > 0 else end)
        self.phases.sort(key=lambda p: p["s"])

    def backward_phases(self, l, begin, end):
        m = self.marks[l]
        # checkpoint layer: the layer's forward runs again first (its own phase, recorded as it ran).
        rec = m.get("recompute")
        start = rec[1] if rec is not None and begin <= rec[0] else begin
        out_end = m.get("out", end)
        att_end = m.get("attention", end)
        comm = m.get("comm")  # tp: the all_reduce of the input's gradient ends the layer's backward
        qkv_end = comm[0] if comm is not None else end
        out = [{"k": "phase", "n": n, "s": s, "e": e} for n, s, e in (
            ("out_proj_backward", start, out_end), ("attention_backward", out_end, att_end),
            ("qkv_proj_backward", att_end, qkv_end))]
        if comm is not None:
            out.append({"k": "phase", "n": "comm", "s": comm[0], "e": comm[1]})
        if self.count > 1:
            out.append({"k": "phase", "n": "L%d" % (l + 1), "s": begin, "e": end})
        return out

    def mark(self, l, name, count):
        # Several tensors may end one stage: it ends when the last of them is reached.
        m = self.marks[l]
        seen = m.get(name + "#", 0) + 1
        m[name + "#"] = seen
        if seen == count:
            m[name] = self.now()

    def backward_comm(self, l, start):
        """tp: the all_reduce of layer l's input gradient ran from `start` until now."""
        if self.marks is not None and self.phases is not None and start is not None:
            self.marks[l]["comm"] = (start, self.now())

    def choice_tensors(self):
        """q, k, v as the call passes them to SDPA (layer 1's), for torch._fused_sdp_choice."""
        with torch.no_grad():
            w = self.weights[0]
            return self.project(self.x, w["w_qkv"], w["b_qkv"])

    def write_gradients(self, folder, write_npy):
        """dx.npy and each layer's weight gradients (a rank that never used its b_o has none)."""
        for name, grad in self.grads.items():
            if grad is not None:
                write_npy(os.path.join(folder, name + ".npy"), grad)

    def write_intermediates(self, folder, write_npy):
        """One more call keeping the stages' tensors; writes [L<n>.]mid_<name>.npy for each (and
        for a deeper layer its input, mid_x, and for train its gradient, L<n>.dx.npy)."""
        self.call(keep=True)
        names = INTERMEDIATES + (INTERMEDIATE_GRADIENTS if self.w.train else ())
        written = []
        try:
            for l, kept in enumerate(self.kept):
                files = [("mid_" + n, kept[n]) for n in (("x",) if l > 0 else ()) + names]
                if self.w.train and l > 0:
                    files.append(("dx", kept["dx"]))
                for name, t in files:
                    path = layer_file(l, name + ".npy")
                    write_npy(os.path.join(folder, path), t)
                    written.append(path)
        finally:
            self.kept = None
            self.grads = None
        return written
