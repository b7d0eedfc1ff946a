"""Values and gradients of the activation functions in PyTorch 1.13, for
tests/nn/activations_test.cpp:

    /usr/bin/python3 tests/golden/generate_activations.py > tests/golden/activations.json

Each case: the function and its arguments, then per dtype y = f(x) and x.grad after y.backward(g),
on points that cross every branch (the thresholds themselves included).
"""
import json

import torch
import torch.nn.functional as F

xs = [-25.0, -4.0, -3.0, -2.5, -1.0, -0.3, -1e-4, 0.0, 1e-4, 0.5, 1.0, 2.9, 3.0, 4.0, 10.0, 19.0, 21.0, 30.0]
gs = [0.5 + 0.1 * i for i in range(len(xs))]
cases = [
    ("leaky_relu", [], lambda t: F.leaky_relu(t)),
    ("leaky_relu", [0.2], lambda t: F.leaky_relu(t, 0.2)),
    ("elu", [], lambda t: F.elu(t)),
    ("elu", [0.5], lambda t: F.elu(t, 0.5)),
    ("selu", [], F.selu),
    ("softplus", [], F.softplus),
    ("softplus", [2.0, 10.0], lambda t: F.softplus(t, 2.0, 10.0)),
    ("hardtanh", [], F.hardtanh),
    ("hardtanh", [-2.0, 2.9], lambda t: F.hardtanh(t, -2.0, 2.9)),
    ("relu6", [], F.relu6),
    ("hardswish", [], F.hardswish),
    ("hardsigmoid", [], F.hardsigmoid),
    ("mish", [], F.mish),
    ("silu", [], F.silu),
    ("sigmoid", [], torch.sigmoid),
    ("tanh", [], torch.tanh),
]
out = {"x": xs, "g": gs, "cases": []}
for name, args, f in cases:
    case = {"name": name, "args": args}
    for dt in (torch.float64, torch.float32):
        x = torch.tensor(xs, dtype=dt, requires_grad=True)
        y = f(x)
        y.backward(torch.tensor(gs, dtype=dt))
        case[str(dt)[6:]] = {"y": y.tolist(), "grad": x.grad.tolist()}
    out["cases"].append(case)
print(json.dumps(out, indent=1))
