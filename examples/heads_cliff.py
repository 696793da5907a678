"""The classic report behind AttnScope: a model of width 64 with a boolean mask [1, 1, L, L] whose
attention memory jumps when the heads go from 8 to 16 (fp16, seq 10000: 405 MB -> 6716 MB on a
V100, 406 MB on a GTX 1070). Width 64 over 16 heads leaves head_dim 4, which the fused kernels
refuse on CUDA, so torch falls back to the math path and materialises the scores per head.

The two calls at a size a CPU runs in seconds:
    attnscope record -- examples/heads_cliff.py
and what the same program does on a V100 with torch 2.1:
    attnscope show REC<n> --gpu V100 --torch 2.1
On a GPU, the report's own size: attnscope record -- examples/heads_cliff.py --seq 10000
"""

import argparse

import torch
import torch.nn.functional as F


class Attention(torch.nn.Module):
    """Self-attention of a fixed model width: head_dim = width / heads."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width, bias=False)

    def forward(self, x, mask):
        b, l, e = x.shape
        q, k, v = self.qkv(x).view(b, l, 3, self.heads, e // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class HeadsCliff(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.heads8 = Attention(width, 8)
        self.heads16 = Attention(width, 16)

    def forward(self, x, mask):
        return self.heads8(x, mask), self.heads16(x, mask)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq", type=int, default=1024, help="sequence length (the report: 10000)")
    p.add_argument("--width", type=int, default=64, help="model width (default 64)")
    p.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    model = HeadsCliff(args.width).to(args.device, dtype)
    x = torch.randn(1, args.seq, args.width, device=args.device, dtype=dtype)
    # A boolean mask [1, 1, L, L], broadcast over batch and heads, as the report's model passed it.
    mask = torch.ones(args.seq, args.seq, device=args.device, dtype=torch.bool).tril()[None, None]
    with torch.no_grad():
        y8, y16 = model(x, mask)
    print("heads 8: output %s, heads 16: output %s" % (tuple(y8.shape), tuple(y16.shape)))


if __name__ == "__main__":
    main()
