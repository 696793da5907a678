"""Tensor parallelism (tp > 1) on the worker's side: the worker that AttnScope talks to becomes the
coordinator of N rank processes and computes nothing itself. Each rank is this same worker script
started in rank mode (attnscope_torch_worker.py --tp-rank R ...; attnscope_torch_tp.py holds what
it does), speaking the same JSON lines over its own pipes; the coordinator forwards each request
to every rank and answers AttnScope once, with:

  run           the slowest rank's seconds (the step's time), every rank's phases (each event
                with "dev": its rank)
  finish        the largest rank's peak, every rank's trace (with "dev"), and "ranks": per rank
                its peak, median timed seconds and communication share; the output and the
                gradients joined from the ranks' files into the run folder as one rank of tp = 1
                would have written them (attnscope_torch_tp.JOIN), so AttnScope checks them as
                it checks any layer
  intermediates the same join of the stages' tensors

Why a coordinator and not rank 0 in the worker: a rank blocked in a collective cannot answer, so
the process that answers AttnScope must never be one; it watches the ranks instead. A rank that
exits, fails or does not answer fails the request with its rank, status and last words (its
stderr), every rank is killed, and the next load starts a fresh group, so the point fails and the
sweep goes on. The ranks stay in the worker's process group, which AttnScope kills on cancel and
its keeper kills when AttnScope dies, and each asks the kernel (PR_SET_PDEATHSIG) to kill it when
the coordinator dies, so no rank outlives its worker. The group is kept between loads of the same
size and device, so a sweep imports torch in the ranks once.

Timeouts: a request's deadline for the ranks is 80 % of AttnScope's own (the request's "timeout",
ATTNSCOPE_TORCH_TIMEOUT), and the ranks' collectives time out at 60 %, so a rank that hangs is
named by the coordinator before AttnScope gives up on the whole worker.
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import torch

from attnscope_torch_files import read_npy, write_npy
from attnscope_torch_tp import join_of

STDERR_KEEP = 8192
# After the first rank fails, how long the others get to say why (a rank that died makes its
# peers' collectives fail within milliseconds; one that raised leaves them waiting).
GRACE_S = 2.0


class RankFailure(Exception):
    """A request failed on a rank: its status (error, oom, unsupported; the worker's classify()
    reads rank_status) and the message for the point."""

    def __init__(self, status, message):
        super().__init__(message)
        self.rank_status = status


def last_words(tail, lines=3):
    """The last few non-empty lines of a rank's stderr, as one line."""
    text = tail.decode("utf-8", "backslashreplace")
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-1500:]


class RankProcess:
    def __init__(self, rank, argv, env, events):
        self.rank = rank
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, close_fds=True)
        self.tail = b""
        self.lock = threading.Lock()
        self.readers = [threading.Thread(target=self.read_stdout, args=(events,), daemon=True),
                        threading.Thread(target=self.read_stderr, daemon=True)]
        for t in self.readers:
            t.start()

    def read_stdout(self, events):
        for line in self.proc.stdout:
            events.put((self.rank, line))
        events.put((self.rank, None))

    def read_stderr(self):
        # Passed on to the worker's stderr (AttnScope keeps its tail) and kept for our messages.
        for line in self.proc.stderr:
            with self.lock:
                self.tail = (self.tail + line)[-STDERR_KEEP:]
            try:
                sys.stderr.write("[tp rank %d] %s" % (self.rank, line.decode("utf-8", "backslashreplace")))
                sys.stderr.flush()
            except Exception:
                pass

    def send(self, obj):
        self.proc.stdin.write((json.dumps(obj) + "\n").encode())
        self.proc.stdin.flush()

    def stderr_tail(self):
        # The reader may still be draining what a dying rank wrote last.
        self.readers[1].join(timeout=1.0)
        with self.lock:
            return self.tail

    def exit_text(self):
        try:
            code = self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        return "exited with status %d" % code if code >= 0 else "was killed by signal %d" % -code

    def kill(self):
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                f.close()
            except Exception:
                pass


def replayed_peak(events):
    """The most bytes live at once in a trace's alloc and free events, in time order (at equal
    times in the profiler's own order: its timestamps are whole microseconds, and putting every
    allocation first there overstated a point by 1 MiB); a free of memory allocated before the
    trace does not count."""
    live, now, peak = {}, 0, 0
    for e in sorted((e for e in events if e.get("k") in ("alloc", "free")), key=lambda e: e.get("s", 0)):
        a, b = e.get("a", 0), int(e.get("b", 0))
        if e["k"] == "alloc":
            live[a] = live.get(a, 0) + b
            now += b
            peak = max(peak, now)
        elif a in live:
            now -= live.pop(a)
    return peak


class RankGroup:
    """N rank processes of one device kind, joined in one torch.distributed group."""

    def __init__(self, world, device_type, threads, timeout_s):
        self.world, self.device_type, self.threads = world, device_type, threads
        self.collective_s = 0.6 * timeout_s  # the ranks' collectives give up after this
        self.folder = tempfile.mkdtemp(prefix="attnscope-tp-")
        self.events = queue.Queue()
        self.ranks = []
        self.next_id = 1
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attnscope_torch_worker.py")
        env = dict(os.environ)
        if device_type == "cpu":
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # every rank is on this machine
        store = os.path.join(self.folder, "store")
        try:
            for r in range(world):
                argv = [sys.executable, script, "--tp-rank", str(r), "--tp-world", str(world), "--tp-store", store,
                        "--tp-device", device_type, "--tp-threads", str(threads), "--tp-parent", str(os.getpid()),
                        "--tp-timeout", "%g" % self.collective_s]
                self.ranks.append(RankProcess(r, argv, env, self.events))
            self.collect(lambda r: None, "starting (importing torch, joining the group)", 0.8 * timeout_s, "ready")
        except BaseException:
            self.kill()
            raise

    def backend(self):
        return "nccl" if self.device_type == "cuda" else "gloo"

    def matches(self, world, device_type, threads):
        return (self.world, self.device_type, self.threads) == (world, device_type, threads) and self.alive()

    def alive(self):
        return bool(self.ranks) and all(p.proc.poll() is None for p in self.ranks)

    def ask(self, request_of, what, timeout_s):
        """Sends request_of(rank) to every rank; their replies in rank order, or RankFailure."""
        return self.collect(request_of, what, 0.8 * timeout_s, None)

    def collect(self, request_of, what, deadline_s, ready):
        ids = {}
        for p in self.ranks:
            req = request_of(p.rank)
            if req is None:
                continue
            req = dict(req, id=self.next_id)
            ids[p.rank] = self.next_id
            self.next_id += 1
            try:
                p.send(req)
            except (BrokenPipeError, OSError):
                pass  # it died: its end of file says so below
        replies, dead, failed_at = {}, [], None
        begun = time.monotonic()
        deadline = begun + deadline_s
        while len(replies) + len(dead) < self.world:
            now = time.monotonic()
            until = deadline if failed_at is None else min(deadline, failed_at + GRACE_S)
            if now >= until:
                break
            try:
                rank, line = self.events.get(timeout=until - now)
            except queue.Empty:
                continue
            if line is None:
                if rank not in replies and rank not in dead:
                    dead.append(rank)
                    failed_at = failed_at or time.monotonic()
                continue
            try:
                j = json.loads(line)
            except ValueError:
                j = None
            if not isinstance(j, dict):
                continue  # not a protocol line (the rank's stdout is ours; say nothing of it)
            if ready is not None:
                if j.get("type") != ready:
                    continue
                if "error" in j:
                    j = {"ok": False, "status": "error", "message": j["error"]}
                else:
                    j["ok"] = True
            elif j.get("id") != ids.get(rank):
                continue
            replies[rank] = j
            if not j.get("ok"):
                failed_at = failed_at or time.monotonic()
        if len(replies) == self.world and all(replies[r].get("ok") for r in range(self.world)):
            return [replies[r] for r in range(self.world)]
        # A rank that failed only once a collective's timeout had passed was waiting for another.
        timed_out = failed_at is not None and failed_at - begun >= 0.95 * self.collective_s
        failure = self.failure(what, replies, dead, time.monotonic() - begun, timed_out)
        self.kill()
        raise failure

    def failure(self, what, replies, dead, waited_s, timed_out):
        """The point's status and message: a rank that died first, then one that failed on its
        own (not in a collective, whose failure is a consequence), then one that never answered;
        when the first failure came at a collective's timeout (NCCL's watchdog kills the waiting
        rank then), the silent rank first: it is the one the others waited for."""
        silent = [r for r in range(self.world) if r not in replies and r not in dead]
        if timed_out and silent:
            dead = []
        for rank in dead:
            p = self.ranks[rank]
            exit_text = p.exit_text()
            words = last_words(p.stderr_tail())
            return RankFailure("error", "tp rank %d %s while %s%s" % (rank, exit_text, what,
                                                                     ": " + words if words else ""))
        errors = [(r, j) for r, j in replies.items() if not j.get("ok")]
        own = [(r, j) for r, j in errors if not j.get("comm_failed")]
        if own:
            r, j = own[0]
            return RankFailure(j.get("status", "error"), "tp rank %d: %s" % (r, j.get("message", "failed")))
        if silent:
            said = [(r, str(j.get("message", ""))) for r, j in errors]
            said += [(r, self.ranks[r].exit_text()) for r in range(self.world) if r not in replies and r not in silent]
            others = "; " + "; ".join("rank %d: %s" % (r, text[:300]) for r, text in said) if said else ""
            return RankFailure("error", "tp rank%s %s did not answer in %.0f s while %s (hung?); stopped every rank%s" % (
                "s" if len(silent) > 1 else "", ", ".join(str(r) for r in silent), waited_s, what, others))
        r, j = errors[0]
        return RankFailure(j.get("status", "error"), "tp rank %d: %s" % (r, j.get("message", "failed")))

    def kill(self):
        for p in self.ranks:
            p.kill()
        self.ranks = []
        shutil.rmtree(self.folder, ignore_errors=True)

    def quit(self):
        """Asks every rank to leave the group and exit; kills those that do not."""
        try:
            self.collect(lambda r: {"op": "quit"}, "quitting", 10.0, None)
        except RankFailure:
            pass
        self.kill()


class Ranked:
    """One loaded tp workload: what the worker's ops do when spec tp > 1."""

    def __init__(self, group, req):
        self.group = group
        spec = req["spec"]
        self.spec = spec
        self.world = group.world
        self.comm = spec.get("tp_comm", "allreduce")
        self.train = spec.get("pass", "forward") == "train"
        self.layer = object()  # the worker asks `workload.layer is not None` (kind layer)
        self.kernel = req["kernel"]
        timeout = float(req.get("timeout", 600))
        replies = group.ask(lambda r: {"op": "load", "device": "cuda:%d" % r if group.device_type == "cuda" else "cpu",
                                       "kernel": req["kernel"], "dir": req["dir"], "spec": spec},
                            "loading the inputs", timeout)
        first = replies[0]
        self.choice = first.get("choice", "")
        how = "all_reduce of each layer's output" if self.comm == "allreduce" else "all_gather of the heads' outputs"
        self.notes = list(first.get("notes", [])) + ["tp %d: heads split over %d ranks, %s (%s), %d thread%s per rank" % (
            self.world, self.world, how, group.backend(), group.threads, "" if group.threads == 1 else "s")]
        self.input_bytes = sum(int(rep.get("input_bytes", 0)) for rep in replies)
        self.warnings = [w for rep in replies for w in rep.get("warnings", [])]

    def run(self, req):
        replies = self.group.ask(lambda r: {"op": "run"}, "running a timed call", float(req.get("timeout", 600)))
        out = {"seconds": max(float(rep["seconds"]) for rep in replies)}
        phases = [dict(e, dev=r) for r, rep in enumerate(replies) for e in rep.get("phases", [])]
        if any("phases" in rep for rep in replies):
            out["phases"] = phases
        self.warnings = [w for rep in replies for w in rep.get("warnings", [])]
        return out

    def rank_dir(self, folder, r):
        d = os.path.join(folder, "rank%d" % r)
        os.makedirs(d, exist_ok=True)
        return d

    def finish(self, req):
        folder = os.path.dirname(req["out"])
        per_rank = max(1, int(req.get("max_events", 20000)) // self.world)
        replies = self.group.ask(lambda r: {"op": "finish", "dir": self.rank_dir(folder, r),
                                            "out": os.path.join(self.rank_dir(folder, r), "out.npy"),
                                            "max_events": per_rank},
                                 "running the profiled call", float(req.get("timeout", 600)))
        names = sorted(n for n in os.listdir(self.rank_dir(folder, 0)) if n.endswith(".npy"))
        self.join(folder, names)
        # A rank's peak is at least what its own events hold at once: the profiler's running total
        # read rank 0 short with tp_comm gather (1.63 MiB where its allocations held 1.94 MiB, as
        # rank 1's did and the plan says).
        for rep in replies:
            if "peak_bytes" in rep:
                rep["peak_bytes"] = max(int(rep["peak_bytes"]), replayed_peak(rep.get("events", [])))
        out = {"ran": replies[0].get("ran", ""),
               "events": [dict(e, dev=r) for r, rep in enumerate(replies) for e in rep.get("events", [])],
               "dropped_events": sum(int(rep.get("dropped_events", 0)) for rep in replies),
               "ranks": [{"rank": r, "peak_bytes": int(rep.get("peak_bytes", 0)), "seconds": rep.get("rank_seconds", 0.0),
                          "comm_share_ppm": min(1000000, max(0, int(round(rep.get("comm_share", 0.0) * 1e6))))}
                         for r, rep in enumerate(replies)]}
        peaks = [int(rep["peak_bytes"]) for rep in replies if "peak_bytes" in rep]
        if peaks:
            out["peak_bytes"] = max(peaks)
        self.warnings = [w for rep in replies for w in rep.get("warnings", [])]
        return out

    def intermediates(self, req):
        folder = req["dir"]
        replies = self.group.ask(lambda r: {"op": "intermediates", "dir": self.rank_dir(folder, r)},
                                 "keeping the stages' tensors", float(req.get("timeout", 600)))
        written = list(replies[0].get("written", []))
        self.join(folder, written)
        return {"written": written}

    def release(self, req):
        self.group.ask(lambda r: {"op": "release"}, "releasing", float(req.get("timeout", 600)))

    def join(self, folder, names):
        """The ranks' files as the run's: see attnscope_torch_tp.JOIN."""
        h, hkv, d = self.spec["heads"], self.spec["kv_heads"], self.spec["head_dim"]
        n = self.world
        for name in names:
            how = join_of(name, self.comm)
            paths = [os.path.join(folder, "rank%d" % r, name) for r in range(n)]
            target = os.path.join(folder, name)
            if how == "same" or how is None:
                shutil.copyfile(paths[0], target)
                continue
            parts = [read_npy(p) for p in paths]
            if how == "heads" or how == "cols":
                joined = torch.cat(parts, dim=1)
            else:  # rows: each rank's q rows, k rows, v rows
                sizes = [h // n * d, hkv // n * d, hkv // n * d]
                split = [p.split(sizes, dim=0) for p in parts]
                joined = torch.cat([s[i] for i in range(3) for s in split], dim=0)
            write_npy(target, joined)
