"""Golden data for nn::functional's losses, recorded once with PyTorch 1.13 (Debian's
python3-torch) and committed as losses.json:

    /usr/bin/python3 tests/golden/generate_losses.py tests/golden/losses.json

Float64 throughout; NaN is written as null. Each case gives the loss function, its inputs, its keyword arguments
(PyTorch's names and defaults: reduction 'mean', ignore_index -100, label_smoothing 0), the
output and, for scalar outputs, the gradient of the output with respect to the first input.
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(1857)
torch.set_default_dtype(torch.float64)


def tensor_json(t):
    """NaN as null: JSON has no NaN."""
    values = [None if v != v else v for v in t.detach().reshape(-1).tolist()]
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": values}


cases = {}


def record(name, fn, inputs, **kwargs):
    x = inputs[0].clone().requires_grad_(True)
    out = getattr(F, fn)(x, *inputs[1:], **kwargs)
    case = {"fn": fn, "inputs": [tensor_json(t) for t in inputs], "kwargs": kwargs, "out": tensor_json(out)}
    if out.dim() == 0:
        out.backward()  # also when the loss is NaN: the gradient may still be finite (all targets ignored)
        case["grad"] = tensor_json(x.grad)
    cases[name] = case


logits = torch.randn(6, 5) * 2
target = torch.tensor([0, 4, -100, 1, 2, 2])
for reduction in ("mean", "sum", "none"):
    for smoothing in (0.0, 0.1):
        record(f"cross_entropy_{reduction}_smoothing{smoothing}", "cross_entropy", [logits, target],
               reduction=reduction, label_smoothing=smoothing)
record("cross_entropy_defaults", "cross_entropy", [logits, target])
record("cross_entropy_ignore_index_2", "cross_entropy", [logits, target.clamp(min=0)], ignore_index=2,
       label_smoothing=0.2)
record("cross_entropy_all_ignored", "cross_entropy", [logits, torch.full((6,), -100)])
spatial = torch.randn(2, 3, 2, 2)
spatial_target = torch.tensor([[[0, 1], [2, -100]], [[1, 1], [0, 2]]])
for reduction in ("mean", "none"):
    record(f"cross_entropy_spatial_{reduction}", "cross_entropy", [spatial, spatial_target], reduction=reduction,
           label_smoothing=0.2)
log_probs = torch.log_softmax(torch.randn(4, 3), 1)
record("nll_loss_mean", "nll_loss", [log_probs, torch.tensor([2, -100, 0, 1])])
record("nll_loss_sum", "nll_loss", [log_probs, torch.tensor([2, -100, 0, 1])], reduction="sum")
a, b = torch.randn(3, 4), torch.randn(3, 4)
for reduction in ("mean", "sum", "none"):
    record(f"mse_loss_{reduction}", "mse_loss", [a, b], reduction=reduction)

# Every target ignored with label smoothing: the loss is NaN for mean, the gradient 0 whatever the
# reduction (a mask multiplied into the smoothing term gave inf * 0 = NaN gradients).
for reduction in ("mean", "sum", "none"):
    record(f"cross_entropy_all_ignored_smoothing_{reduction}", "cross_entropy", [logits, torch.full((6,), -100)],
           reduction=reduction, label_smoothing=0.1)
record("nll_loss_all_ignored", "nll_loss", [log_probs, torch.full((4,), -100)])

with open(sys.argv[1], "w") as f:
    json.dump({"torch_version": torch.__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
