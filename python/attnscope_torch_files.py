"""The torch worker's .npy files, without numpy: AttnScope's own writer (core/inputs/npy.cpp) makes the
inputs, C order, little-endian, descr <f4, <f2 or |b1; outputs and gradients go back as <f4.
torch is imported by the worker before any of this runs.
"""

import ast
import ctypes

import torch


NPY_DTYPES = {"<f4": "float32", "<f2": "float16", "|b1": "bool"}


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("%s: not a .npy file" % path)
    major = data[6]
    if major == 1:
        hlen = int.from_bytes(data[8:10], "little")
        start = 10
    else:
        hlen = int.from_bytes(data[8:12], "little")
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    descr = header["descr"]
    if descr not in NPY_DTYPES or header.get("fortran_order"):
        raise ValueError("%s: unsupported array %r" % (path, header))
    dtype = getattr(torch, NPY_DTYPES[descr])
    shape = tuple(header["shape"])
    body = bytearray(data[start + hlen:])
    if len(body) == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(body, dtype=dtype).reshape(shape).clone()


def write_npy(path, tensor):
    t = tensor.detach().to("cpu", torch.float32).contiguous()
    shape = tuple(t.shape)
    shape_text = "(%s)" % (", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    pad = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode("latin1"))
        if t.numel():
            f.write(ctypes.string_at(t.data_ptr(), t.numel() * 4))
