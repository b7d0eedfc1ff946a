"""Golden data for nn::functional::scaled_dot_product_attention, recorded once with PyTorch 1.13
(Debian's python3-torch) and committed as attention.safetensors:

    /usr/bin/python3 tests/golden/generate_attention.py tests/golden/attention.safetensors

PyTorch 1.13 has no fused attention, so each case is its math definition, in float32:
softmax(scale * q k^T, masked) v, with the causal mask top-left aligned (query i sees keys
0..i, as PyTorch 2's is_causal). The file holds q, k, v and grad_out ("<case>.in."), the
output ("<case>.out") and the gradients of sum(out * grad_out) ("<case>.grad.q" ...).
The metadata entry "<case>" gives is_causal and scale.
"""
import json
import math
import struct
import sys

import torch

torch.manual_seed(2014)
tensors = {}
metadata = {}


def record(name, B, H, L, S, D, causal, scale=None):
    q, k, v = (torch.randn(B, H, n, D) * 1.5 for n in (L, S, S))
    for t in (q, k, v):
        t.requires_grad_(True)
    s = scale if scale is not None else 1.0 / math.sqrt(D)
    scores = q @ k.transpose(-2, -1) * s
    if causal:
        scores = scores.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    out = torch.softmax(scores, -1) @ v
    grad_out = torch.randn_like(out)
    (out * grad_out).sum().backward()
    for key, t in (("in.q", q), ("in.k", k), ("in.v", v), ("in.grad_out", grad_out), ("out", out),
                   ("grad.q", q.grad), ("grad.k", k.grad), ("grad.v", v.grad)):
        tensors[f"{name}.{key}"] = t.detach().contiguous()
    metadata[name] = json.dumps({"is_causal": causal, "scale": scale})


record("causal_blocks", 1, 2, 70, 70, 32, True)        # a partial second block of queries and keys
record("cross_long_keys", 2, 1, 5, 67, 8, False)       # more keys than one block, few queries
record("causal_rectangular", 1, 1, 6, 9, 3, True)      # L != S: top-left aligned mask
record("explicit_scale", 1, 3, 17, 17, 20, False, 0.3)
record("single", 1, 1, 1, 1, 1, True)

# safetensors by hand (8-byte header length, JSON header, raw little-endian bytes).
header, blobs, offset = {}, [], 0
for key in sorted(tensors):
    data = tensors[key].numpy().tobytes()
    header[key] = {"dtype": "F32", "shape": list(tensors[key].shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
header["__metadata__"] = {"generator": "tests/golden/generate_attention.py", "torch": torch.__version__, **metadata}
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
print(f"{len(tensors)} tensors, {len(metadata)} cases -> {sys.argv[1]}")
