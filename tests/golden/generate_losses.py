"""Golden data for nn::functional's losses, recorded once with PyTorch 1.13 (Debian's
python3-torch) and committed as losses.json:

    /usr/bin/python3 tests/golden/generate_losses.py tests/golden/losses.json

NaN is written as null, an infinity as "inf" or "-inf". Each case gives the loss function, its inputs (float64 unless the case
name ends in _f32), its keyword arguments (PyTorch's names; a tensor argument such as weight is
written like an input; the others take PyTorch's defaults: reduction 'mean', ignore_index -100,
label_smoothing 0, beta 1, delta 1, log_target False), the output, and the gradients of
sum(output * grad_output) with respect to the first input ("grad") and, where the case says so,
the target ("target_grad"); grad_output is 1 for a scalar output and written out otherwise.
"""
import json
import sys

import torch
import torch.nn.functional as F

torch.manual_seed(1857)
torch.set_default_dtype(torch.float64)


def json_number(v):
    """JSON has no NaN or infinity: NaN is null, an infinity the string "inf" or "-inf"."""
    if v != v:
        return None
    return ("inf" if v > 0 else "-inf") if abs(v) == float("inf") else v


def tensor_json(t):
    values = [json_number(v) for v in t.detach().reshape(-1).tolist()]
    return {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""), "values": values}


cases = {}


def record(name, fn, inputs, target_grad=False, **kwargs):
    x = inputs[0].clone().requires_grad_(True)
    rest = list(inputs[1:])
    if target_grad:
        rest[0] = rest[0].clone().requires_grad_(True)
    out = getattr(F, fn)(x, *rest, **kwargs)
    written = {k: tensor_json(v) if torch.is_tensor(v) else v for k, v in kwargs.items()}
    case = {"fn": fn, "inputs": [tensor_json(t) for t in inputs], "kwargs": written, "out": tensor_json(out)}
    # Also when the loss is NaN: the gradient may still be finite (every target ignored).
    if out.dim() == 0:
        out.backward()
    else:
        grad_output = torch.linspace(-1, 2, out.numel(), dtype=out.dtype).reshape(out.shape)
        case["grad_output"] = tensor_json(grad_output)
        out.backward(grad_output)
    case["grad"] = tensor_json(x.grad)
    if target_grad:
        case["target_grad"] = tensor_json(rest[0].grad)
    cases[name] = case


def f32(t):
    return t.float() if torch.is_tensor(t) and t.is_floating_point() else t


def record_both(name, fn, inputs, **kwargs):
    """The case in float64 and, as name_f32, in float32."""
    record(name, fn, inputs, **kwargs)
    record(name + "_f32", fn, [f32(t) for t in inputs], **{k: f32(v) for k, v in kwargs.items()})


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

# The losses added on 2026-11-30 and cross_entropy's weight, probability targets and unbatched
# input; a new seed so the cases above keep their values.
torch.manual_seed(1913)
REDUCTIONS = ("mean", "sum", "none")

# Elementwise losses; d = input - target is exactly 0, 1 and -1 at three places (the branch points
# of smooth_l1 with beta 1 and of huber with delta 1).
a, b = torch.randn(3, 4) * 2, torch.randn(3, 4) * 2
a[0, :3] = torch.tensor([0.75, 0.5, 0.25])
b[0, :3] = torch.tensor([0.75, -0.5, 1.25])
for r in REDUCTIONS:
    record_both(f"l1_loss_{r}", "l1_loss", [a, b], target_grad=True, reduction=r)
    record_both(f"smooth_l1_loss_{r}", "smooth_l1_loss", [a, b], target_grad=True, reduction=r)
    record_both(f"huber_loss_{r}", "huber_loss", [a, b], target_grad=True, reduction=r)
    record(f"mse_loss_{r}_f32", "mse_loss", [a.float(), b.float()], target_grad=True, reduction=r)
for beta in (0.0, 0.5, 2.0):
    # With beta 0 and d == 0 PyTorch gives the input gradient -1 and the target gradient -1 too
    # (its backward with the operands swapped); strider gives the target +1, so no target here.
    record_both(f"smooth_l1_loss_beta{beta}", "smooth_l1_loss", [a, b], target_grad=beta > 0, beta=beta)
    record_both(f"huber_loss_delta{beta or 0.25}", "huber_loss", [a, b], target_grad=True, delta=beta or 0.25)
nd_a, nd_b = torch.randn(2, 3, 2, 2), torch.randn(2, 3, 2, 2)
for fn in ("l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss"):
    record(f"{fn}_4d_none", fn, [nd_a, nd_b], target_grad=True, reduction="none")
    for r in REDUCTIONS:
        record(f"{fn}_empty_{r}", fn, [torch.zeros(0, 3), torch.zeros(0, 3)], reduction=r)

# kl_div: log-probabilities against probabilities with a zero (whose target gradient is NaN).
kl_in = torch.log_softmax(torch.randn(3, 5), 1)
kl_t = torch.softmax(torch.randn(3, 5) * 2, 1)
kl_t[1, 2] = 0.0
for r in REDUCTIONS + ("batchmean",):
    record_both(f"kl_div_{r}", "kl_div", [kl_in, kl_t], target_grad=True, reduction=r)
    record_both(f"kl_div_log_target_{r}", "kl_div", [kl_in, torch.log_softmax(torch.randn(3, 5), 1)],
                target_grad=True, reduction=r, log_target=True)
record("kl_div_0d_batchmean", "kl_div", [torch.tensor(-0.7), torch.tensor(0.3)], target_grad=True,
       reduction="batchmean")
record("kl_div_4d_batchmean", "kl_div", [torch.log_softmax(nd_a, 1), torch.softmax(nd_b, 1)], reduction="batchmean")
for r in REDUCTIONS + ("batchmean",):
    record(f"kl_div_empty_{r}", "kl_div", [torch.zeros(0, 3), torch.zeros(0, 3)], reduction=r)

# binary_cross_entropy: probabilities at and next to 0 and 1 (the -100 clamp, the 1e-12 floor).
p = torch.rand(3, 4)
p[0] = torch.tensor([0.0, 1.0, 1e-10, 1 - 1e-7])
p[1, :2] = torch.tensor([0.0, 1e-30])
t = torch.rand(3, 4)
t[0] = torch.tensor([0.0, 1.0, 1.0, 0.0])
t[1, :2] = torch.tensor([1.0, 1.0])
bce_w = torch.rand(4) + 0.5
for r in REDUCTIONS:
    record_both(f"binary_cross_entropy_{r}", "binary_cross_entropy", [p, t], target_grad=True, reduction=r)
    record_both(f"binary_cross_entropy_weight_{r}", "binary_cross_entropy", [p, t], target_grad=True, reduction=r,
                weight=bce_w)
    record(f"binary_cross_entropy_empty_{r}", "binary_cross_entropy", [torch.zeros(0, 3), torch.zeros(0, 3)],
           reduction=r)
record("binary_cross_entropy_3d", "binary_cross_entropy", [torch.rand(2, 3, 4), torch.rand(2, 3, 4)],
       target_grad=True, weight=torch.rand(3, 1) + 0.5)

# binary_cross_entropy_with_logits at +-1e4 and +-30 (the stable form), with weight and pos_weight.
z = torch.randn(3, 4) * 3
z[0] = torch.tensor([1e4, -1e4, 30.0, -30.0])
z[1, :2] = torch.tensor([0.0, -1e4])
zt = torch.rand(3, 4)
zt[0] = torch.tensor([0.0, 1.0, 0.0, 1.0])
zt[1, :2] = torch.tensor([0.5, 0.0])
pos_w = torch.tensor([2.0, 0.5, 1.0, 3.0])
for r in REDUCTIONS:
    record_both(f"bce_logits_{r}", "binary_cross_entropy_with_logits", [z, zt], target_grad=True, reduction=r)
    record_both(f"bce_logits_weight_{r}", "binary_cross_entropy_with_logits", [z, zt], target_grad=True,
                reduction=r, weight=bce_w)
    record_both(f"bce_logits_pos_weight_{r}", "binary_cross_entropy_with_logits", [z, zt], target_grad=True,
                reduction=r, pos_weight=pos_w)
    record_both(f"bce_logits_both_{r}", "binary_cross_entropy_with_logits", [z, zt], target_grad=True,
                reduction=r, weight=torch.rand(3, 1) + 0.5, pos_weight=pos_w)
    record(f"bce_logits_empty_{r}", "binary_cross_entropy_with_logits", [torch.zeros(0, 4), torch.zeros(0, 4)],
           reduction=r, pos_weight=pos_w)
record("bce_logits_3d_pos_weight", "binary_cross_entropy_with_logits", [torch.randn(2, 3, 4), torch.rand(2, 3, 4)],
       target_grad=True, pos_weight=pos_w)

# cross_entropy / nll_loss with class weights (the weighted mean divides by the kept targets'
# weights), with ignore_index and label smoothing.
ce_x = torch.randn(6, 5) * 2
ce_t = torch.tensor([0, 4, -100, 1, 2, 2])
ce_w = torch.rand(5) + 0.2
for r in REDUCTIONS:
    for ls in (0.0, 0.1):
        record_both(f"cross_entropy_weight_{r}_smoothing{ls}", "cross_entropy", [ce_x, ce_t], weight=ce_w,
                    reduction=r, label_smoothing=ls)
    record_both(f"nll_loss_weight_{r}", "nll_loss", [torch.log_softmax(ce_x, 1), ce_t], weight=ce_w, reduction=r)
record("cross_entropy_weight_ignore_index_3", "cross_entropy", [ce_x, ce_t.clamp(min=0)], weight=ce_w,
       ignore_index=3, label_smoothing=0.3)
sp_x, sp_t = torch.randn(2, 3, 2, 2), torch.tensor([[[0, 1], [2, -100]], [[1, 1], [0, 2]]])
for r in REDUCTIONS:
    record(f"cross_entropy_spatial_weight_{r}", "cross_entropy", [sp_x, sp_t], weight=ce_w[:3], reduction=r,
           label_smoothing=0.2)
    record(f"nll_loss_spatial_weight_{r}", "nll_loss", [torch.log_softmax(sp_x, 1), sp_t], weight=ce_w[:3],
           reduction=r)
record("cross_entropy_3d_none", "cross_entropy", [torch.randn(2, 4, 3), torch.tensor([[0, 3, 1], [2, 2, -100]])],
       reduction="none", label_smoothing=0.1)
for r in REDUCTIONS:
    record(f"cross_entropy_all_ignored_weight_smoothing_{r}", "cross_entropy", [ce_x, torch.full((6,), -100)],
           weight=ce_w, reduction=r, label_smoothing=0.1)
# Kept targets whose weights are all 0: PyTorch's loss and gradients are NaN (0 / 0, inf * 0).
record("cross_entropy_zero_total_weight", "cross_entropy", [ce_x[:3], torch.tensor([1, 1, -100])],
       weight=torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0]), label_smoothing=0.1)
record("nll_loss_zero_total_weight", "nll_loss", [torch.log_softmax(ce_x[:3], 1), torch.tensor([1, 1, -100])],
       weight=torch.tensor([1.0, 0.0, 1.0, 1.0, 1.0]))

# Class-probability targets (a floating target of the input's shape), smoothed and weighted.
soft_t = torch.softmax(torch.randn(6, 5), 1)
for r in REDUCTIONS:
    for ls in (0.0, 0.2):
        record_both(f"cross_entropy_probs_{r}_smoothing{ls}", "cross_entropy", [ce_x, soft_t], target_grad=True,
                    reduction=r, label_smoothing=ls)
    record_both(f"cross_entropy_probs_weight_{r}", "cross_entropy", [ce_x, soft_t], target_grad=True, weight=ce_w,
                reduction=r, label_smoothing=0.1)
record("cross_entropy_probs_spatial", "cross_entropy", [sp_x, torch.softmax(torch.randn(2, 3, 2, 2), 1)],
       target_grad=True, label_smoothing=0.1)

# Unbatched [C] input: a 0-d class index (also ignored) or probabilities of shape [C].
u = torch.randn(5)
for r in REDUCTIONS:
    record(f"cross_entropy_unbatched_{r}", "cross_entropy", [u, torch.tensor(3)], weight=ce_w, reduction=r,
           label_smoothing=0.1)
    record(f"cross_entropy_unbatched_probs_{r}", "cross_entropy", [u, soft_t[0]], target_grad=True, reduction=r)
record("cross_entropy_unbatched_ignored_none", "cross_entropy", [u, torch.tensor(-100)], reduction="none")
record("nll_loss_unbatched", "nll_loss", [torch.log_softmax(u, 0), torch.tensor(1)], weight=ce_w)

# Logits of +-1e4: log_softmax keeps every value finite.
big = torch.tensor([[1e4, -1e4, 0.0, 1.0], [-1e4, -1e4, -1e4, 1e4], [1e4, 1e4, -1e4, 0.0]])
big_t = torch.tensor([1, 3, 2])
record_both("cross_entropy_extreme_logits", "cross_entropy", [big, big_t], label_smoothing=0.1,
            weight=torch.tensor([1.0, 2.0, 0.5, 1.5]))
record_both("cross_entropy_extreme_logits_probs", "cross_entropy", [big, torch.softmax(torch.randn(3, 4), 1)],
            target_grad=True)

# Empty batches: Mean is NaN, Sum 0, None empty.
for r in REDUCTIONS:
    record(f"cross_entropy_empty_{r}", "cross_entropy", [torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)],
           reduction=r, label_smoothing=0.1, weight=ce_w)
    record(f"cross_entropy_empty_probs_{r}", "cross_entropy", [torch.zeros(0, 5), torch.zeros(0, 5)], reduction=r)
    record(f"nll_loss_empty_{r}", "nll_loss", [torch.zeros(0, 5), torch.zeros(0, dtype=torch.long)], reduction=r)

with open(sys.argv[1], "w") as f:
    json.dump({"torch_version": torch.__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
