#!/usr/bin/env python3
"""Tests of python/attnscope_record.py (what `attnscope record` runs) with a real torch: each test
runs the recorder on small generated programs in a temporary folder and reads its JSON file.

Run with the Python that has torch: PY tests/record/test_recorder.py. Exit status 77 (skipped) when
that Python has no torch. Keep it small: the whole file runs in well under a minute on 2 cores.
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDER = os.path.join(ROOT, "python", "attnscope_record.py")
PY = sys.executable
CHOICE_NAMES = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}

if importlib.util.find_spec("torch") is None:
    print("skipped: no torch in %s" % PY)
    sys.exit(77)

import torch  # noqa: E402  (after the skip)


def line_of(source, marker):
    """The 1-based line of `source` that ends with the comment `# @marker`."""
    for i, line in enumerate(source.splitlines(), 1):
        if line.rstrip().endswith("# @" + marker):
            return i
    raise AssertionError("no marker %s" % marker)


class RecorderTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="attnscope-record-test-")
        self.out = os.path.join(self.dir, "rec.json")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, source):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(source))
        with open(path) as f:
            return f.read()

    def recorder_argv(self, program, *options):
        return [PY, RECORDER, "--out", self.out] + list(options) + ["--"] + list(program)

    def record(self, program, *options, timeout=60):
        p = subprocess.run(self.recorder_argv(program, *options), cwd=self.dir, capture_output=True,
                           timeout=timeout)
        return p, self.recording()

    def recording(self):
        with open(self.out, "rb") as f:
            return json.loads(f.read().decode("utf-8"))

    def plain(self, program, timeout=60):
        return subprocess.run([PY] + list(program), cwd=self.dir, capture_output=True, timeout=timeout)

    def calls_at(self, doc, site):
        return [c for c in doc["calls"] if c["site"] == site]

    # -----------------------------------------------------------------------------------------

    def test_attention_module_forward_and_backward(self):
        src = self.write("script.py", """\
            import torch, torch.nn as nn, torch.nn.functional as F
            from torch.nn.attention import sdpa_kernel, SDPBackend
            torch.set_num_threads(1)
            B, H, HKV, L, D = 2, 4, 2, 8, 16

            class Attention(nn.Module):
                def forward(self, q, k, v, kv):
                    bmask = torch.ones(1, 1, L, L, dtype=torch.bool).tril()
                    full = bmask.expand(B, H, L, L).contiguous()
                    fmask = torch.zeros(B, 1, L, L)
                    outs = [
                        F.scaled_dot_product_attention(q, k, v, attn_mask=bmask),  # @bool
                        F.scaled_dot_product_attention(q, k, v, attn_mask=full),  # @full
                        F.scaled_dot_product_attention(q, k, v, is_causal=True),  # @causal
                        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True),  # @gqa
                        F.scaled_dot_product_attention(q, k, v, attn_mask=fmask),  # @float
                    ]
                    with sdpa_kernel(SDPBackend.MATH):
                        outs.append(F.scaled_dot_product_attention(q, k, v, attn_mask=bmask))  # @math
                    return outs

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.attn = Attention()

                def forward(self, *args):
                    return self.attn(*args)

            model = Model()
            for step in range(2):
                q, k, v = (torch.randn(B, H, L, D, requires_grad=True) for _ in range(3))
                kv = torch.randn(B, HKV, L, D, requires_grad=True)
                sum(o.sum() for o in model(q, k, v, kv)).backward()
            print("ok")
            """)
        p, doc = self.record(["script.py"])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(p.stdout, b"ok\n")
        self.assertTrue(doc["complete"])
        self.assertEqual(doc["calls_seen"], 12)
        self.assertEqual(doc["recorder_errors"], [])

        from torch.nn.attention import SDPBackend, sdpa_kernel
        B, H, HKV, L, D = 2, 4, 2, 8, 16
        q = torch.randn(B, H, L, D, requires_grad=True)
        kv = torch.randn(B, HKV, L, D, requires_grad=True)
        bmask = torch.ones(1, 1, L, L, dtype=torch.bool).tril()

        def choice(k=q, mask=None, causal=False, gqa=False):
            kw = {"enable_gqa": True} if gqa else {}
            return CHOICE_NAMES[int(torch._fused_sdp_choice(q, k, k, mask, 0.0, causal, **kw))]

        with sdpa_kernel(SDPBackend.MATH):
            math_choice = choice(mask=bmask)
        expected = {  # marker: (mask kind, broadcast, materialised, k shape, fused choice)
            "bool": ("bool", True, False, [B, H, L, D], choice(mask=bmask)),
            "full": ("bool", False, True, [B, H, L, D], choice(mask=bmask.expand(B, H, L, L).contiguous())),
            "causal": ("none", False, False, [B, H, L, D], choice(causal=True)),
            "gqa": ("none", False, False, [B, HKV, L, D], choice(k=kv, gqa=True)),
            "float": ("float", True, False, [B, H, L, D], choice(mask=torch.zeros(B, 1, L, L))),
            "math": ("bool", True, False, [B, H, L, D], math_choice),
        }
        self.assertEqual(math_choice, "math")
        for marker, (kind, broadcast, materialised, kshape, fused) in expected.items():
            with self.subTest(marker=marker):
                calls = self.calls_at(doc, "script.py:%d" % line_of(src, marker))
                self.assertEqual(len(calls), 1)
                c = calls[0]
                self.assertEqual(c["op"], "scaled_dot_product_attention")
                self.assertEqual(c["module"], "Model.attn")
                self.assertEqual(c["count"], 2)
                self.assertEqual(c["q"]["shape"], [B, H, L, D])
                self.assertEqual(c["k"]["shape"], kshape)
                self.assertEqual(c["q"]["dtype"], "float32")
                self.assertEqual(c["q"]["device"], "cpu")
                self.assertTrue(c["requires_grad"])
                self.assertEqual(c["mask"]["kind"], kind)
                self.assertEqual(c["mask"]["broadcast"], broadcast)
                self.assertEqual(c["mask"]["materialised"], materialised)
                self.assertEqual(c["is_causal"], marker == "causal")
                self.assertEqual(c["enable_gqa"], marker == "gqa")
                self.assertEqual(c["fused_choice"], fused)
                self.assertEqual(c["ran"], fused)  # on the CPU: flash, or math where forced
                self.assertEqual(c["memory_method"], "profiler")
                self.assertEqual(c["memory_measured"], 2)  # both calls are among the first K = 3
                self.assertGreater(c["bytes_max"], 0)
                self.assertEqual(len(c["samples"]), 2)
                self.assertIsNotNone(c["backward"])
                self.assertEqual(c["backward"]["count"], 2)
                self.assertGreater(c["backward"]["time_min_s"], 0)
                self.assertTrue(all(s["backward_time_s"] is not None for s in c["samples"]))
                if fused == "math":
                    self.assertEqual(c["aten_ops"], [])
                else:
                    self.assertEqual(c["aten_ops"], ["_scaled_dot_product_flash_attention_for_cpu"])

    def test_transformer_encoder_train_and_fast_paths(self):
        src = self.write("enc.py", """\
            import torch, torch.nn as nn
            torch.set_num_threads(1)
            layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
            enc = nn.TransformerEncoder(layer, 2)
            x = torch.randn(2, 5, 16)
            pad = torch.zeros(2, 5, dtype=torch.bool)
            pad[1, 3:] = True
            enc.train()
            enc(x, src_key_padding_mask=pad).sum().backward()  # @train
            enc.eval()
            with torch.no_grad():
                enc(x, src_key_padding_mask=pad)  # @eval
                mha = nn.MultiheadAttention(16, 2, batch_first=True).eval()
                mha(x, x, x, need_weights=False)  # @mha
            print("ok")
            """)
        p, doc = self.record(["enc.py"])
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(doc["recorder_errors"], [])
        train = self.calls_at(doc, "enc.py:%d" % line_of(src, "train"))
        self.assertEqual(sorted(c["module"] for c in train),
                         ["TransformerEncoder.layers.0.self_attn", "TransformerEncoder.layers.1.self_attn"])
        for c in train:
            self.assertEqual(c["op"], "scaled_dot_product_attention")
            self.assertEqual(c["q"]["shape"], [2, 2, 5, 8])
            # F.multi_head_attention_forward turns the key padding mask into a float [B, H, 1, S] one.
            self.assertEqual(c["mask"]["kind"], "float")
            self.assertEqual(c["mask"]["shape"], [2, 2, 1, 5])
            self.assertTrue(c["mask"]["broadcast"])
            self.assertTrue(c["requires_grad"])
            self.assertEqual(c["backward"]["count"], 1)
        # eval + no_grad: torch 2.15 takes nn.TransformerEncoderLayer's fast path, which bypasses
        # both SDPA and torch._native_multi_head_attention; the padded batch becomes a nested tensor.
        fast = self.calls_at(doc, "enc.py:%d" % line_of(src, "eval"))
        self.assertEqual(sorted(c["module"] for c in fast),
                         ["TransformerEncoder.layers.0", "TransformerEncoder.layers.1"])
        for c in fast:
            self.assertEqual(c["op"], "_transformer_encoder_layer_fwd")
            self.assertEqual(c["q"]["shape"], [2, 2, 5, 8])
            self.assertTrue(any("TransformerEncoderLayer's fast path" in n for n in c["notes"]), c["notes"])
            self.assertTrue(any("nested tensor" in n for n in c["notes"]), c["notes"])
            self.assertEqual(c["ran"], "math")  # on the CPU the op runs its own bmm + softmax
            self.assertFalse(c["requires_grad"])
            self.assertIsNone(c["backward"])
        mha = self.calls_at(doc, "enc.py:%d" % line_of(src, "mha"))
        self.assertEqual(len(mha), 1)
        c = mha[0]
        self.assertEqual(c["op"], "_native_multi_head_attention")
        self.assertEqual(c["module"], "MultiheadAttention")
        self.assertEqual(c["q"]["shape"], [2, 2, 5, 8])
        self.assertEqual(c["mask"]["kind"], "none")
        self.assertTrue(any("nn.MultiheadAttention's fast path" in n for n in c["notes"]), c["notes"])
        self.assertEqual(c["ran"], "math")
        self.assertGreater(c["bytes_max"], 0)
        self.assertEqual(len(doc["calls"]), 5)

    @unittest.skipIf(importlib.util.find_spec("transformers") is None, "transformers is not installed")
    def test_transformers_tiny_gpt2(self):
        self.write("hf.py", """\
            import torch
            from transformers import GPT2Config, GPT2LMHeadModel
            torch.set_num_threads(1)
            cfg = GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100, n_positions=32,
                             attn_implementation="sdpa")
            model = GPT2LMHeadModel(cfg)
            ids = torch.randint(0, 100, (2, 8))
            model(ids, labels=ids).loss.backward()
            """)
        p, doc = self.record(["hf.py"], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        sdpa = [c for c in doc["calls"] if c["op"] == "scaled_dot_product_attention"]
        self.assertEqual(sum(c["count"] for c in sdpa), 2)
        self.assertTrue(all(c["module"].startswith("GPT2LMHeadModel.transformer.h.") for c in sdpa))
        self.assertTrue(all(c["backward"] for c in sdpa))

    # -----------------------------------------------------------------------------------------

    def test_program_runs_as_python_runs_it(self):
        """stdout and stderr byte-exact (the recorder's profiler says nothing), sys.argv, __file__,
        sys.path[0], __main__, an uncaught exception's traceback and status: all as `python` gives."""
        self.write("sub/prog.py", """\
            import json, sys, warnings
            import torch, torch.nn.functional as F
            sys.stdout.write("out \\u00e9\\n")
            sys.stdout.flush()
            sys.stdout.buffer.write(b"\\xff raw\\n")
            sys.stdout.buffer.flush()
            sys.stderr.write("err line\\n")
            print(json.dumps({"argv": sys.argv, "file": __file__, "path0": sys.path[0], "name": __name__,
                              "main": sys.modules["__main__"].__dict__ is globals()}))
            q = torch.randn(1, 2, 4, 8)
            for _ in range(4):
                F.scaled_dot_product_attention(q, q, q)
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.5)
            warnings.warn("a warning of the program's")

            def fail():
                raise ValueError("boom")

            fail()
            """)
        program = ["sub/prog.py", "a", "b c", "--x"]
        p, doc = self.record(program)
        ref = self.plain(program)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.returncode, ref.returncode)
        self.assertEqual(p.stdout, ref.stdout)
        self.assertEqual(p.stderr, ref.stderr)
        self.assertIn(b"ValueError: boom", p.stderr)
        seen = json.loads(p.stdout.decode("utf-8", "replace").splitlines()[2])
        self.assertEqual(seen, {"argv": program, "file": os.path.join(self.dir, "sub/prog.py"),
                                "path0": os.path.join(os.path.realpath(self.dir), "sub"), "name": "__main__",
                                "main": True})
        self.assertTrue(doc["complete"])
        self.assertEqual(doc["exit_code"], 1)
        self.assertEqual(sum(c["count"] for c in doc["calls"]), 5)
        self.assertEqual({c["site"] for c in doc["calls"]}, {"sub/prog.py:12", "sub/prog.py:13"})

    def test_exit_status_passes_through(self):
        self.write("exit.py", "import sys\nprint('bye')\nsys.exit(5)\n")
        p, doc = self.record(["exit.py"])
        self.assertEqual(p.returncode, 5)
        self.assertEqual(p.stdout, b"bye\n")
        self.assertEqual(p.stderr, b"")
        self.assertTrue(doc["complete"])
        self.assertEqual(doc["exit_code"], 5)
        self.assertEqual(doc["error"], "")
        self.assertEqual(doc["calls"], [])

    def test_module_mode(self):
        self.write("pkgdir/mymod.py", """\
            import json, sys
            print(json.dumps({"argv": sys.argv, "path0": sys.path[0], "name": __name__, "file": __file__}))
            raise KeyError("from the module")
            """)
        p, doc = subprocess.run(self.recorder_argv(["-m", "mymod", "x", "-y"]), cwd=os.path.join(self.dir, "pkgdir"),
                                capture_output=True, timeout=60), self.recording()
        ref = subprocess.run([PY, "-m", "mymod", "x", "-y"], cwd=os.path.join(self.dir, "pkgdir"),
                             capture_output=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout, p.stderr), (ref.returncode, ref.stdout, ref.stderr))
        seen = json.loads(p.stdout)
        self.assertEqual(seen["argv"], [os.path.join(self.dir, "pkgdir", "mymod.py"), "x", "-y"])
        self.assertEqual(seen["name"], "__main__")
        self.assertEqual(doc["exit_code"], 1)
        missing = subprocess.run(self.recorder_argv(["-m", "no_such_module_here"]), cwd=self.dir,
                                 capture_output=True, timeout=60)
        ref = self.plain(["-m", "no_such_module_here"])
        self.assertEqual((missing.returncode, missing.stderr), (ref.returncode, ref.stderr))

    def test_missing_script_and_bad_options(self):
        p = subprocess.run(self.recorder_argv(["nope.py"]), cwd=self.dir, capture_output=True, timeout=60)
        ref = self.plain(["nope.py"])
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr, ref.stderr)  # "...: can't open file '.../nope.py': [Errno 2] No such file..."
        doc = self.recording()
        self.assertTrue(doc["complete"])
        self.assertIn("can't open file", doc["error"])
        for argv in ([PY, RECORDER, "--", "x.py"], [PY, RECORDER, "--out", self.out, "--samples", "z", "--", "x.py"],
                     [PY, RECORDER, "--out", self.out, "--bogus", "--", "x.py"], [PY, RECORDER, "--out", self.out],
                     [PY, RECORDER, "--out", os.path.join(self.dir, "no", "dir", "r.json"), "--", "x.py"]):
            p = subprocess.run(argv, cwd=self.dir, capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 2, argv)
            self.assertTrue(p.stderr.startswith(b"attnscope record: "), p.stderr)

    def test_python_without_torch(self):
        other = None
        for name in ("python3", "python3.11", "python3.12", "python"):
            path = shutil.which(name)
            if path and os.path.realpath(path) != os.path.realpath(PY) and subprocess.run(
                    [path, "-c", "import torch"], capture_output=True).returncode != 0:
                other = path
                break
        if other is None:
            self.skipTest("no Python without torch on PATH")
        self.write("t.py", "print('never')\n")
        p = subprocess.run([other, RECORDER, "--out", self.out, "--", "t.py"], cwd=self.dir, capture_output=True,
                           timeout=60)
        self.assertEqual(p.returncode, 3)
        self.assertEqual(p.stdout, b"")
        self.assertEqual(len(p.stderr.splitlines()), 1)
        doc = self.recording()
        self.assertIn("no torch", doc["error"])
        self.assertTrue(doc["complete"])

    # -----------------------------------------------------------------------------------------

    LOOPER = """\
        import sys, time, torch, torch.nn.functional as F
        torch.set_num_threads(1)
        q = torch.randn(1, 1, 4, 8)
        n, t = 0, None
        # Past several of the 0.5 s between periodic writes: on a loaded machine (CI building
        # beside it) one interval alone was missed.
        while t is None or time.time() - t < 2.0:
            F.scaled_dot_product_attention(q, q, q)
            n += 1
            t = t or time.time()  # from the end of the first call (which starts the profiler)
        print("made", n, flush=True)
        time.sleep(60)
        """

    def start_looper(self):
        self.write("loop.py", self.LOOPER)
        proc = subprocess.Popen(self.recorder_argv(["loop.py"]), cwd=self.dir, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        line = proc.stdout.readline().split()
        self.assertEqual(line[0], b"made")
        return proc, int(line[1])

    def test_sigkill_keeps_the_last_periodic_write(self):
        proc, made = self.start_looper()
        proc.kill()
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, -signal.SIGKILL)
        doc = self.recording()
        self.assertFalse(doc["complete"])
        self.assertEqual(len(doc["calls"]), 1)
        self.assertGreater(doc["calls"][0]["count"], 1)
        self.assertLessEqual(doc["calls"][0]["count"], made)

    def test_sigint_and_sigterm(self):
        proc, made = self.start_looper()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, -signal.SIGINT)  # as Python itself dies of an uncaught Ctrl-C
        self.assertTrue(err.startswith(b"Traceback (most recent call last):\n  File \"%s\"" %
                                       os.path.join(self.dir, "loop.py").encode()), err)
        self.assertTrue(err.endswith(b"KeyboardInterrupt\n"), err)
        doc = self.recording()
        self.assertTrue(doc["complete"])
        self.assertTrue(doc["interrupted"])
        self.assertEqual(doc["calls"][0]["count"], made)

        proc, made = self.start_looper()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        self.assertEqual(proc.returncode, -signal.SIGTERM)
        doc = self.recording()
        self.assertTrue(doc["complete"])
        self.assertTrue(doc["terminated"])
        self.assertFalse(doc["interrupted"])
        self.assertEqual(doc["calls"][0]["count"], made)

    def test_many_tiny_calls_stay_one_signature(self):
        self.write("many.py", """\
            import time, torch, torch.nn.functional as F
            torch.set_num_threads(1)
            q = torch.randn(1, 1, 4, 8)
            sdpa = F.scaled_dot_product_attention

            def calls(n):
                for _ in range(n):
                    sdpa(q, q, q)

            calls(1000)
            t = time.perf_counter()
            calls(100000)
            print(time.perf_counter() - t)
            """)
        p, doc = self.record(["many.py"], timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        ref = self.plain(["many.py"], timeout=120)
        with_recorder, without = float(p.stdout), float(ref.stdout)
        size = os.path.getsize(self.out)
        print("\n  100k tiny SDPA calls: %.2f s plain, %.2f s recorded: %.1f us of recorder time a call "
              "(recorder's own count: %.1f us); file %d bytes" % (
                  without, with_recorder, (with_recorder - without) / 1e5 * 1e6,
                  doc["overhead_s"] / doc["calls_seen"] * 1e6, size), file=sys.stderr)
        self.assertEqual(len(doc["calls"]), 1)
        self.assertEqual(doc["calls"][0]["count"], 101000)
        self.assertEqual(len(doc["calls"][0]["samples"]), 3)
        self.assertLess(size, 8192)

    def test_torch_features_keep_working(self):
        """CausalBias masks give torch's results, torch.compile and torch.jit.script still work (and
        compiled calls are not seen), a call under the program's own profiler gets no memory, torch's
        exception passes unchanged and is recorded, and --max-signatures drops calls beyond it."""
        src = self.write("compat.py", """\
            import torch, torch.nn as nn, torch.nn.functional as F
            from torch.nn.attention.bias import causal_lower_right
            torch.set_num_threads(1)
            q, k = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 6, 8)
            bias = causal_lower_right(4, 6)
            a = F.scaled_dot_product_attention(q, k, k, attn_mask=bias)  # @bias
            b = F.scaled_dot_product_attention(q, k, k, attn_mask=bias._materialize())
            assert torch.allclose(a, b, atol=1e-6)

            def f(x):
                return F.scaled_dot_product_attention(x, x, x, is_causal=True)  # @f

            x = torch.randn(1, 2, 4, 8)
            assert torch.equal(torch.compile(f, backend="eager", fullgraph=True)(x), f(x))
            m = torch.jit.script(nn.MultiheadAttention(8, 2))
            m(x[0], x[0], x[0])
            with torch.profiler.profile(profile_memory=True):  # the program's own profiler
                F.scaled_dot_product_attention(x, x, x)  # @prof
            bad = torch.randn(1, 2, 6, 8, dtype=torch.float64)  # q and k are float32
            try:
                F.scaled_dot_product_attention(q, k, bad)  # @raise
            except RuntimeError as e:
                try:
                    torch._C._nn.scaled_dot_product_attention(q, k, bad)  # torch's own builtin
                except RuntimeError as ref:
                    assert type(e) is type(ref) and e.args == ref.args, (e, ref)
            for n in range(3, 8):
                F.scaled_dot_product_attention(torch.randn(1, 1, n, 8), x, x)
            print("ok")
            """)
        p, doc = self.record(["compat.py"], "--max-signatures", "5", timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode())
        self.assertEqual(p.stdout, b"ok\n")
        self.assertEqual(doc["calls_skipped"].get("torch_function"), 1)
        self.assertEqual(len(doc["calls"]), 5)
        bias_calls = self.calls_at(doc, "compat.py:%d" % line_of(src, "bias"))  # CausalBias's own SDPA call
        self.assertEqual(len(bias_calls), 1)
        self.assertEqual(bias_calls[0]["mask"]["shape"], [4, 6])
        f_calls = self.calls_at(doc, "compat.py:%d" % line_of(src, "f"))
        self.assertEqual([c["count"] for c in f_calls], [1])  # the eager call only
        prof = self.calls_at(doc, "compat.py:%d" % line_of(src, "prof"))[0]
        self.assertEqual((prof["count"], prof["memory_measured"], doc["memory_skipped"]), (1, 0, 1))
        raised = self.calls_at(doc, "compat.py:%d" % line_of(src, "raise"))[0]
        self.assertEqual(raised["raised_count"], 1)
        self.assertTrue(raised["raised"].startswith("RuntimeError: "), raised["raised"])
        self.assertEqual(raised["ran"], "")  # only a call that returns shows its kernel
        self.assertEqual(doc["recorder_errors"], [])
        self.assertEqual(doc["calls_seen"], 5 + 5)
        self.assertEqual(doc["calls_dropped"], 5)


if __name__ == "__main__":
    t = time.time()
    result = unittest.main(exit=False, verbosity=2).result
    print("%.1f s" % (time.time() - t), file=sys.stderr)
    sys.exit(0 if result.wasSuccessful() else 1)
