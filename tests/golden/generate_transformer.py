"""Golden data for nn::MultiheadAttention and nn::TransformerEncoderLayer, recorded once with
PyTorch 1.13 (Debian's python3-torch) and committed as transformer.safetensors:

    /usr/bin/python3 tests/golden/generate_transformer.py tests/golden/transformer.safetensors

For each case the file holds the module's state dict (PyTorch's names, under "<case>.param."),
the call's tensors ("<case>.in."), the outputs ("<case>.out."), and the gradients of
sum(output * grad_out) with respect to every parameter and floating input ("<case>.grad.").
The metadata entry "<case>" is a JSON description of the module and the call.
"""
import json
import struct
import sys

import torch

torch.manual_seed(1913)
tensors = {}
metadata = {}


def put(key, t):
    tensors[key] = t.detach().contiguous()


def record(name, module, module_cfg, args, kwargs, call_cfg):
    module.train()  # dropout is 0 in every case; train mode keeps PyTorch off its inference fast path
    for k, v in module.state_dict().items():
        put(f"{name}.param.{k}", v)
    leaves = {}
    for k, v in list(args.items()) + list(kwargs.items()):
        if not isinstance(v, torch.Tensor):
            continue
        put(f"{name}.in.{k}", v)
        if v.is_floating_point() and k in ("query", "key", "value", "src"):
            v.requires_grad_(True)
            leaves[k] = v
    out = module(*args.values(), **kwargs)
    outputs = out if isinstance(out, tuple) else (out,)
    put(f"{name}.out.output", outputs[0])
    if len(outputs) > 1 and outputs[1] is not None:
        put(f"{name}.out.weights", outputs[1])
    grad_out = torch.randn_like(outputs[0])
    put(f"{name}.in.grad_out", grad_out)
    (outputs[0] * grad_out).sum().backward()
    for k, p in module.named_parameters():
        put(f"{name}.grad.{k}", p.grad)
    for k, v in leaves.items():
        put(f"{name}.grad.{k}", v.grad)
    metadata[name] = json.dumps({"module": module_cfg, "call": call_cfg, "positional": list(args.keys()),
                                 "keywords": [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]})


E, H, L, S, N = 8, 2, 5, 4, 3


def mha(**opts):
    return torch.nn.MultiheadAttention(E, H, dropout=0.0, **opts)


def padding(n, s, last_valid):
    m = torch.zeros(n, s, dtype=torch.bool)
    for i, v in enumerate(last_valid):
        m[i, v:] = True
    return m


# Self-attention, sequence first, no masks, head-averaged weights.
x = torch.randn(L, N, E)
record("mha_self", mha(), {"kind": "mha"}, {"query": x, "key": x.clone(), "value": x.clone()}, {},
       {"need_weights": True, "average_attn_weights": True})

# Cross-attention, batch first, bool padding and bool attention masks, per-head weights.
q, k = torch.randn(N, L, E), torch.randn(N, S, E)
am = torch.zeros(L, S, dtype=torch.bool)
am[0, 3] = am[2, 1] = am[4, 0] = True
record("mha_bool_masks", mha(batch_first=True), {"kind": "mha", "batch_first": True},
       {"query": q, "key": k, "value": torch.randn(N, S, E)},
       {"key_padding_mask": padding(N, S, [4, 3, 2]), "attn_mask": am, "average_attn_weights": False},
       {"need_weights": True, "average_attn_weights": False})

# Floating per-(batch, head) attention mask plus a bool padding mask, sequence first.
record("mha_float_mask", mha(), {"kind": "mha"},
       {"query": torch.randn(L, N, E), "key": torch.randn(S, N, E), "value": torch.randn(S, N, E)},
       {"key_padding_mask": padding(N, S, [4, 4, 1]), "attn_mask": torch.randn(N * H, L, S)},
       {"need_weights": True, "average_attn_weights": True})

# Separate key/value sizes, add_bias_kv and add_zero_attn, without bias.
record("mha_kdim_vdim", mha(kdim=6, vdim=7, add_bias_kv=True, add_zero_attn=True, bias=False),
       {"kind": "mha", "kdim": 6, "vdim": 7, "add_bias_kv": True, "add_zero_attn": True, "bias": False},
       {"query": torch.randn(L, N, E), "key": torch.randn(S, N, 6), "value": torch.randn(S, N, 7)},
       {"key_padding_mask": padding(N, S, [2, 4, 3]), "need_weights": False},
       {"need_weights": False, "average_attn_weights": True})

# Unbatched input.
record("mha_unbatched", mha(), {"kind": "mha"},
       {"query": torch.randn(L, E), "key": torch.randn(S, E), "value": torch.randn(S, E)},
       {"key_padding_mask": torch.tensor([False, False, True, False])},
       {"need_weights": True, "average_attn_weights": True})

# Encoder layers: post-norm ReLU with a padding mask; pre-norm GELU, batch first, causal float mask.
tel_cfg = {"kind": "tel", "dim_feedforward": 16, "activation": "relu", "norm_first": False, "batch_first": False}
record("tel_post_relu", torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0), tel_cfg,
       {"src": torch.randn(L, N, E)}, {"src_key_padding_mask": padding(N, L, [5, 3, 4])}, {})
causal = torch.triu(torch.full((L, L), float("-inf")), diagonal=1)
tel_cfg = {"kind": "tel", "dim_feedforward": 16, "activation": "gelu", "norm_first": True, "batch_first": True}
record("tel_pre_gelu", torch.nn.TransformerEncoderLayer(E, H, dim_feedforward=16, dropout=0.0, activation="gelu",
                                                        norm_first=True, batch_first=True), tel_cfg,
       {"src": torch.randn(N, L, E)}, {"src_mask": causal}, {})

# safetensors by hand (8-byte header length, JSON header, raw little-endian bytes).
dtypes = {torch.float32: "F32", torch.bool: "BOOL", torch.int64: "I64"}
header, blobs, offset = {}, [], 0
for key in sorted(tensors):
    t = tensors[key]
    data = t.numpy().tobytes()
    header[key] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
    blobs.append(data)
    offset += len(data)
header["__metadata__"] = {"generator": "tests/golden/generate_transformer.py", "torch": torch.__version__, **metadata}
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
print(f"{len(tensors)} tensors, {len(metadata)} cases -> {sys.argv[1]}")
