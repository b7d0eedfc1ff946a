"""PyTorch 1.13's defaults that strider's layers must share, recorded once with Debian's
python3-torch and committed as defaults.json:

    /usr/bin/python3 tests/golden/generate_defaults.py tests/golden/defaults.json

"state_dicts": for each module built with only its required arguments, its state_dict() keys
in order with shape, dtype and, where every element is the same (buffers, constant
initializations), the values.
"gains": torch.nn.init.calculate_gain for each nonlinearity (with and without a parameter).
"modules": default constructor arguments read from the modules themselves.
"""
import json
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)

MODULES = {
    "BatchNorm1d": lambda: nn.BatchNorm1d(4),
    "BatchNorm2d": lambda: nn.BatchNorm2d(4),
    "LayerNorm": lambda: nn.LayerNorm([4]),
    "GroupNorm": lambda: nn.GroupNorm(2, 4),
    "Linear": lambda: nn.Linear(3, 2),
    "Conv2d": lambda: nn.Conv2d(2, 4, 3),
    "ConvTranspose2d": lambda: nn.ConvTranspose2d(2, 4, 3),
    "Embedding": lambda: nn.Embedding(5, 3),
    "MultiheadAttention": lambda: nn.MultiheadAttention(8, 2),
    "TransformerEncoderLayer": lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16),
}


def entry(t):
    """Shape and dtype; the values too when every element is the same (buffers, constant inits)."""
    e = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
    flat = t.reshape(-1)
    if flat.numel() > 0 and bool((flat == flat[0]).all()):
        e["values"] = flat.tolist()
    return e


state_dicts = {}
for name, make in MODULES.items():
    m = make()
    state_dicts[name] = [[k, entry(v)] for k, v in m.state_dict().items()]

gains = {}
for nl in ("linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
    gains[nl] = nn.init.calculate_gain(nl)
gains["leaky_relu(0.2)"] = nn.init.calculate_gain("leaky_relu", 0.2)

bn, ln, gn, do = nn.BatchNorm2d(4), nn.LayerNorm([4]), nn.GroupNorm(2, 4), nn.Dropout()
mha, tel = nn.MultiheadAttention(8, 2), nn.TransformerEncoderLayer(8, 2)
modules = {
    "BatchNorm": {"eps": bn.eps, "momentum": bn.momentum, "affine": bn.affine,
                  "track_running_stats": bn.track_running_stats},
    "LayerNorm": {"eps": ln.eps, "elementwise_affine": ln.elementwise_affine},
    "GroupNorm": {"eps": gn.eps, "affine": gn.affine},
    "Dropout": {"p": do.p},
    "MultiheadAttention": {"dropout": mha.dropout, "batch_first": mha.batch_first,
                           "add_zero_attn": mha.add_zero_attn, "bias": mha.in_proj_bias is not None,
                           "add_bias_kv": mha.bias_k is not None},
    "TransformerEncoderLayer": {"dim_feedforward": tel.linear1.out_features, "dropout": tel.dropout.p,
                                "layer_norm_eps": tel.norm1.eps, "batch_first": tel.self_attn.batch_first,
                                "norm_first": tel.norm_first, "activation": tel.activation.__name__},
    "DataLoader": {"batch_size": 1, "shuffle": False, "drop_last": False},  # torch.utils.data.DataLoader's signature
    "DistributedSampler": {"shuffle": True, "seed": 0, "drop_last": False},
}
import inspect
dl = inspect.signature(torch.utils.data.DataLoader.__init__).parameters
assert (dl["batch_size"].default, dl["shuffle"].default, dl["drop_last"].default) == (1, None, False)
ds = inspect.signature(torch.utils.data.distributed.DistributedSampler.__init__).parameters
assert (ds["shuffle"].default, ds["seed"].default, ds["drop_last"].default) == (True, 0, False)

with open(sys.argv[1], "w") as f:
    json.dump({"torch_version": torch.__version__, "state_dicts": state_dicts, "gains": gains, "modules": modules},
              f, separators=(",", ":"))
    f.write("\n")
