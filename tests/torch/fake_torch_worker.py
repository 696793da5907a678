"""A torch worker that misbehaves on purpose, for the tests of AttnScope's side of the protocol
(docs/TORCH_WORKER.md). It needs no torch: a fake "python" shell script runs it with the system's
python3 as `fake_torch_worker.py MODE [the worker script AttnScope passes]`.

Modes: ok, record (appends a line to $FAKE_LOG and reports torch $FAKE_TORCH), negative_seconds,
string_threads, die_in_run, huge_line, many_events, many_warnings, bad_utf8_reply, bad_utf8_hello,
hello_escape."""

import json
import os
import struct
import sys

mode = sys.argv[1]
out = sys.stdout.buffer


def send(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


def write_zeros_npy(path, shape):
    """A float32 .npy of zeros (the output's shape; the tests skip the accuracy check)."""
    count = 1
    for s in shape:
        count *= s
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % s for s in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(4 * count))


hello = {"type": "hello", "protocol": 1, "python": "3.11.7", "executable": "/fake/python", "pid": os.getpid(),
         "torch": os.environ.get("FAKE_TORCH", "2.15.0"), "torch_cuda": "", "torch_cudnn": "",
         "cuda_available": False, "cuda_reason": "fake", "cuda_devices": [], "threads": 3,
         "sdpa_kernel": True, "enable_gqa": True, "causal_lower_right": True}
if mode == "record":
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write("called as %s\n" % os.environ.get("FAKE_NAME", "?"))
if mode == "string_threads":
    hello["threads"] = "many"
if mode == "hello_escape":
    hello = {"type": "hello", "protocol": 1, "python": "3.11.7", "executable": "/fake/python",
             "error": "broken torch \x1b]2;retitled\x07 \x1b[31mred"}
if mode == "bad_utf8_hello":
    out.write(b'{"type":"hello","protocol":1,"python":"3.11.7","executable":"/fake/\xff\xfe/python"}\n')
    out.flush()
    sys.exit(0)
send(hello)
if "error" in hello:
    sys.exit(0)

spec = None
for line in sys.stdin:
    req = json.loads(line)
    rid, op = req["id"], req["op"]
    reply = {"id": rid, "ok": True, "warnings": []}
    if op == "load":
        spec = req["spec"]
        reply.update({"choice": "math", "notes": ["fake"], "input_bytes": 0})
    elif op == "run":
        if mode == "die_in_run":
            os._exit(3)
        reply["seconds"] = -1.0 if mode == "negative_seconds" else 0.001
    elif op == "finish":
        write_zeros_npy(req["out"], [spec["batch"], spec["heads"], spec["seq"], spec["head_dim"]])
        reply.update({"peak_bytes": 4096, "ran": "math", "events": [], "dropped_events": 0})
        if mode == "huge_line":
            # 300 MB on one line, written in pieces: AttnScope must stop reading long before the end.
            out.write(b'{"id":%d,"ok":true,"warnings":["' % rid)
            piece = b"x" * (1 << 20)
            try:
                for _ in range(300):
                    out.write(piece)
                out.write(b'"]}\n')
                out.flush()
            except BrokenPipeError:
                pass
            sys.exit(0)
        if mode == "many_events":
            reply["events"] = [{"k": "alloc", "s": 1, "b": 1, "a": 1, "d": 0}] * (req["max_events"] + 1)
        if mode == "many_warnings":
            reply["warnings"] = ["W" * 1000000] + ["warning %d" % i for i in range(100)]
        if mode == "bad_utf8_reply":
            out.write(b'{"id":%d,"ok":true,"peak_bytes":4096,"ran":"ma\xffth","events":[],"warnings":[]}\n' % rid)
            out.flush()
            continue
    elif op == "quit":
        send(reply)
        break
    send(reply)
