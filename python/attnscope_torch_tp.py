"""Tensor parallelism for AttnScope's torch layer, inside one rank process (started by
attnscope_torch_ranks.py; imported by attnscope_torch_worker.py in rank mode and by
attnscope_torch_layer.py). Megatron's split of an attention layer over N ranks:

  rank r holds query heads [r H/N, (r+1) H/N) and kv heads [r Hkv/N, (r+1) Hkv/N): its rows of
  w_qkv and b_qkv (its q rows, then its k rows, then its v rows) and, for tp_comm allreduce, its
  columns of w_o (the inputs of its heads); gather keeps the whole w_o on every rank.

  allreduce:  x -> copy_in -> qkv (own heads) -> attention -> o_r w_o[:, cols_r]^T (+ b_o on rank
              0 only, so the sum adds it once) -> all_reduce(SUM) -> y
  gather:     x -> copy_in -> qkv (own heads) -> attention -> all_gather(o) -> merge -> full
              output projection on every rank -> y

copy_in is the identity forward and an all_reduce of the input's gradient backward (each rank's dx
is the part of its heads' rows). The all_reduce of y has the identity backward; the gather's
backward is the rank's own slice of the gradient, since every rank computes the same y and there
is one loss, not N. Every collective is recorded as a "comm" phase by the layer (forward) or by
the function itself (backward, where it ends the layer's qkv_proj_backward).

ATTNSCOPE_TEST_TP_RANK_FAIL (tests only): "exit" or "hang", optionally ":RANK" (default: the last
rank): that rank exits with status 3, or sleeps, at its first collective of a timed call, so the
tests can see a rank die or hang mid-run.
"""

import contextlib
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

# How each file a rank writes is joined into the run's (attnscope_torch_ranks.py): the name
# without a stack's "L<n>." prefix -> how.
#   same:  every rank holds the whole tensor (rank 0's is taken)
#   heads: dim 1 is heads, the ranks' in order
#   rows:  w_qkv's rows: each rank's q, k, v rows, joined as all q rows, then k, then v
#   cols:  w_o's columns (allreduce; gather keeps the whole w_o, so "same")
JOIN = {"out.npy": "same", "dx.npy": "same", "db_o.npy": "same", "mid_x.npy": "same",
        "dw_qkv.npy": "rows", "db_qkv.npy": "rows", "dw_o.npy": "cols",
        "mid_q.npy": "heads", "mid_k.npy": "heads", "mid_v.npy": "heads", "mid_o.npy": "heads",
        "mid_d_o.npy": "heads", "mid_dq.npy": "heads", "mid_dk.npy": "heads", "mid_dv.npy": "heads"}


def join_of(name, comm):
    base = name.split(".", 1)[1] if name.startswith("L") and "." in name and name[1:name.index(".")].isdigit() else name
    how = JOIN.get(base)
    if how == "cols" and comm == "gather":
        return "same"
    return how


class Rank:
    """This process's place in the group: its heads, its slices, its collectives."""

    def __init__(self, rank, world, device_type, comm, timeout_s):
        self.rank, self.world, self.comm = rank, world, comm
        self.device_type = device_type
        self.backend = "nccl" if device_type == "cuda" else "gloo"
        self.timeout_s = timeout_s
        self.recorder = None  # the layer, while it records phases: its phase() and mark_comm()
        self.fail = test_failure(rank, world)
        self.armed = False  # a timed call is running: the test hook may fire
        self.comm_failed = False  # the last request's failure came out of a collective

    def init(self, store_path):
        # A file store in the coordinator's private folder: no port to pick, none to collide.
        if self.device_type == "cuda":
            torch.cuda.set_device(self.rank)
        dist.init_process_group(self.backend, init_method="file://" + store_path, rank=self.rank,
                                world_size=self.world, timeout=datetime.timedelta(seconds=self.timeout_s))

    def device(self):
        return torch.device("cuda", self.rank) if self.device_type == "cuda" else torch.device("cpu")

    # Slices of the full tensors, as this rank holds them.
    def q_heads(self, heads):
        n = heads // self.world
        return self.rank * n, (self.rank + 1) * n

    def qkv_rows(self, t, heads, kv_heads, head_dim):
        """This rank's rows of w_qkv (or b_qkv): its q rows, then its k rows, then its v rows."""
        hq, hkv = heads // self.world, kv_heads // self.world
        q0, k0, v0 = 0, heads * head_dim, (heads + kv_heads) * head_dim
        r = self.rank
        parts = [t[q0 + r * hq * head_dim:q0 + (r + 1) * hq * head_dim],
                 t[k0 + r * hkv * head_dim:k0 + (r + 1) * hkv * head_dim],
                 t[v0 + r * hkv * head_dim:v0 + (r + 1) * hkv * head_dim]]
        return torch.cat(parts, dim=0).contiguous()

    def o_cols(self, w_o, heads, head_dim):
        """allreduce: the columns of w_o [E, H D] that take this rank's heads."""
        if self.comm == "gather":
            return w_o
        a, b = self.q_heads(heads)
        return w_o[:, a * head_dim:b * head_dim].contiguous()

    def mask_heads(self, mask, heads):
        """A per-head mask [B,H,L,S] keeps this rank's heads; a broadcast one [1,1,L,S] stays."""
        if mask is None or mask.dim() != 4 or mask.shape[1] != heads or heads == 1:
            return mask
        a, b = self.q_heads(heads)
        return mask[:, a:b].contiguous()

    # Collectives, each timed as a "comm" phase by whoever records.
    def collective(self):
        if self.fail and self.armed:
            self.fire_test_failure()

    def fire_test_failure(self):
        mode = self.fail
        self.fail = None
        sys.stderr.write("attnscope test hook: tp rank %d %s (ATTNSCOPE_TEST_TP_RANK_FAIL)\n" % (
            self.rank, "exits with status 3" if mode == "exit" else "hangs"))
        sys.stderr.flush()
        if mode == "exit":
            os._exit(3)
        while True:
            time.sleep(3600)

    def all_reduce(self, t):
        self.collective()
        with self.communicating():
            dist.all_reduce(t)
        return t

    def all_gather(self, parts, t):
        self.collective()
        with self.communicating():
            dist.all_gather(parts, t)

    def barrier(self):
        with self.communicating():
            if self.device_type == "cuda":
                dist.barrier(device_ids=[self.rank])
            else:
                dist.barrier()

    @contextlib.contextmanager
    def communicating(self):
        # A collective that fails is (nearly always) a peer's failure seen from here: the
        # coordinator names the peer instead (attnscope_torch_ranks.RankGroup.failure).
        try:
            yield
        except Exception:
            self.comm_failed = True
            raise

    def copy_in(self, x, layer_index):
        return _CopyIn.apply(x, self, layer_index)

    def reduce_out(self, y):
        return _ReduceOut.apply(y, self)

    def gather_heads(self, o):
        """o [B, H/N, L, D] of every rank as one [N, B, H/N, L, D] (rank-major)."""
        return _GatherHeads.apply(o, self)

    def close(self):
        if dist.is_initialized():
            dist.destroy_process_group()


def test_failure(rank, world):
    spec = os.environ.get("ATTNSCOPE_TEST_TP_RANK_FAIL", "")
    if not spec:
        return None
    mode, _, which = spec.partition(":")
    target = int(which) if which.strip().isdigit() else world - 1
    return mode if mode in ("exit", "hang") and rank == target else None


class _CopyIn(torch.autograd.Function):
    """Identity forward; backward: the all_reduce of the input's gradient (the ranks' partial dx)."""

    @staticmethod
    def forward(ctx, x, tp, layer_index):
        ctx.tp, ctx.layer_index = tp, layer_index
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        tp = ctx.tp
        grad = grad.contiguous()
        recorder = tp.recorder
        start = recorder.now() if recorder is not None else None
        tp.all_reduce(grad)
        if recorder is not None:
            recorder.backward_comm(ctx.layer_index, start)
        return grad, None, None


class _ReduceOut(torch.autograd.Function):
    """all_reduce(SUM) forward (in place: the partial output is ours alone); identity backward."""

    @staticmethod
    def forward(ctx, y, tp):
        ctx.mark_dirty(y)
        tp.all_reduce(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _GatherHeads(torch.autograd.Function):
    """all_gather of every rank's heads forward; backward: this rank's slice of the gradient."""

    @staticmethod
    def forward(ctx, o, tp):
        ctx.rank = tp.rank
        o = o.contiguous()
        out = o.new_empty((tp.world,) + tuple(o.shape))
        tp.all_gather(list(out.unbind(0)), o)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.rank], None
