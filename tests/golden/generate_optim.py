"""Golden data for strider's optimizers and LR schedulers, recorded once with PyTorch 1.13
(Debian's python3-torch) and committed as optim.json:

    /usr/bin/python3 tests/golden/generate_optim.py tests/golden/optim.json

Everything is float64, so the C++ tests compare with tight tolerances. The file holds:

"trajectories": per case, an optimizer built on two param groups with different options, the
  initial parameters, the gradient of every parameter at every step (null: the parameter has no
  gradient that step), the parameters after every step, and optimizer.state_dict() at the end
  (tensors as {"shape", "values"}, PyTorch's keys as they are). A case may add a param group
  after some step ("add_group"). "continue" is one more step from that state dict, so a test can
  load the dict into a fresh optimizer and check the next step.
"schedulers": per case, get_last_lr() (and each group's momentum or beta1) after construction
  and after every step() until the schedule ends.
"""
import json
import math
import sys

import torch
from torch.optim.lr_scheduler import LambdaLR, OneCycleLR, StepLR

torch.manual_seed(1913)
torch.set_default_dtype(torch.float64)


def tensor_json(t):
    return {"shape": list(t.shape), "values": t.detach().reshape(-1).tolist()}


def state_dict_json(opt):
    sd = opt.state_dict()
    state = {}
    for index, entries in sd["state"].items():
        state[str(index)] = {k: (tensor_json(v) if torch.is_tensor(v) else v) for k, v in entries.items()}
    groups = []
    for g in sd["param_groups"]:
        groups.append({k: (list(v) if isinstance(v, tuple) else v) for k, v in g.items()})
    return {"state": state, "param_groups": groups}


SHAPES = {"w": (3, 2), "b": (3,), "c": (2, 2)}

# name -> (optimizer class, defaults, [group overrides...], steps, grads missing {step: [names]},
#          optional (after step, names, overrides) for add_param_group)
CASES = {
    "sgd_momentum_dampening": (torch.optim.SGD, dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
                               [dict(), dict(lr=0.05, weight_decay=0.0)], 5, {}, None),
    "sgd_nesterov_maximize": (torch.optim.SGD, dict(lr=0.1, momentum=0.8, nesterov=True),
                              [dict(weight_decay=0.1), dict(lr=0.3, maximize=True, momentum=0.5)], 5, {2: ["b"]},
                              None),
    "sgd_plain": (torch.optim.SGD, dict(lr=0.2), [dict(), dict(lr=0.1, weight_decay=0.5)], 3, {}, None),
    "adam_l2_amsgrad": (torch.optim.Adam, dict(lr=0.01, weight_decay=0.1),
                        [dict(), dict(lr=0.02, betas=(0.8, 0.99), amsgrad=True)], 6, {2: ["b"]},
                        (3, ["c"], dict(lr=0.05, eps=1e-6))),
    "adamw_default_decay": (torch.optim.AdamW, dict(lr=0.01),
                            [dict(), dict(weight_decay=0.0, eps=1e-6, maximize=True)], 5, {1: ["w"]},
                            (2, ["c"], dict(amsgrad=True))),
}


def trajectory(cls, defaults, overrides, steps, missing, add_group):
    params = {n: torch.randn(*s) for n, s in SHAPES.items()}
    initial = {n: tensor_json(p) for n, p in params.items()}
    live = {n: p.clone().requires_grad_(True) for n, p in params.items()}
    group_names = [["w"], ["b"]]
    opt = cls([dict(params=[live[n] for n in names], **o) for names, o in zip(group_names, overrides)], **defaults)
    grads, after = [], []
    for step in range(steps + 1):  # the last is "continue"
        if add_group and step == add_group[0]:
            opt.add_param_group(dict(params=[live[n] for n in add_group[1]], **add_group[2]))
            group_names.append(add_group[1])
        active = [n for names in group_names for n in names]
        g = {}
        for n in active:
            if n in missing.get(step, []):
                live[n].grad = None
                g[n] = None
            else:
                live[n].grad = torch.randn(*SHAPES[n])
                g[n] = tensor_json(live[n].grad)
        if step == steps:
            before = state_dict_json(opt)
            before_params = {n: tensor_json(live[n]) for n in active}
        opt.step()
        grads.append(g)
        after.append({n: tensor_json(live[n]) for n in active})
    return {
        "optimizer": cls.__name__, "defaults": {k: (list(v) if isinstance(v, tuple) else v) for k, v in defaults.items()},
        "groups": [dict(names=names, options={k: (list(v) if isinstance(v, tuple) else v) for k, v in o.items()})
                   for names, o in zip([["w"], ["b"]], overrides)],
        "add_group": None if add_group is None else {"after_step": add_group[0], "names": add_group[1],
                                                     "options": add_group[2]},
        "initial": initial, "grads": grads[:steps], "after": after[:steps], "state_dict": before,
        "continue": {"params": before_params, "grads": grads[steps], "after": after[steps]},
    }


def schedule(make_opt, make_sched, steps, momentum_key=None):
    opt = make_opt()
    sched = make_sched(opt)

    def snapshot():
        entry = {"lr": list(sched.get_last_lr())}
        if momentum_key == "momentum":
            entry["momentum"] = [g["momentum"] for g in opt.param_groups]
        elif momentum_key == "betas":
            entry["momentum"] = [g["betas"][0] for g in opt.param_groups]
        return entry

    out = [snapshot()]
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(snapshot())
    return {"values": out, "param_groups": state_dict_json(opt)["param_groups"]}


def two_groups(cls, lr1, **defaults):
    """cls over two groups: a [2] with the defaults, b [3] with lr lr1."""
    def make():
        a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
        return cls([dict(params=[a]), dict(params=[b], lr=lr1)], **defaults)
    return make


SCHEDULERS = {
    "lambda_two_groups": schedule(two_groups(torch.optim.SGD, lr=0.1, lr1=0.05),
                                  lambda o: LambdaLR(o, [lambda s: 0.95 ** s, lambda s: 1.0 / (1.0 + s)]), 12),
    "lambda_one_factor": schedule(two_groups(torch.optim.AdamW, lr=0.01, lr1=0.02),
                                  lambda o: LambdaLR(o, lambda s: min(1.0, (s + 1) / 4.0)), 8),
    "step_lr": schedule(two_groups(torch.optim.SGD, lr=1.0, lr1=0.5), lambda o: StepLR(o, 3, gamma=0.5), 10),
    "one_cycle_cos_sgd": schedule(two_groups(torch.optim.SGD, lr=0.1, lr1=0.05, momentum=0.9),
                                  lambda o: OneCycleLR(o, max_lr=[0.1, 0.05], total_steps=20), 20, "momentum"),
    "one_cycle_linear_three_phase_adam": schedule(
        two_groups(torch.optim.Adam, lr=0.01, lr1=0.02),
        lambda o: OneCycleLR(o, max_lr=0.01, total_steps=17, anneal_strategy="linear", three_phase=True,
                             div_factor=10.0, final_div_factor=100.0, pct_start=0.25, base_momentum=0.8,
                             max_momentum=0.9), 17, "betas"),
    "one_cycle_epochs_no_momentum": schedule(
        two_groups(torch.optim.SGD, lr=0.1, lr1=0.05),
        lambda o: OneCycleLR(o, max_lr=[0.3, 0.2], epochs=3, steps_per_epoch=5, pct_start=0.4,
                             cycle_momentum=False), 15, "momentum"),
    "one_cycle_sgd_without_momentum": schedule(
        two_groups(torch.optim.SGD, lr=0.1, lr1=0.05),
        lambda o: OneCycleLR(o, max_lr=0.1, total_steps=10, base_momentum=[0.85, 0.8], max_momentum=[0.95, 0.9]),
        10, "momentum"),
}

golden = {
    "torch_version": torch.__version__,
    "trajectories": {name: trajectory(*case) for name, case in CASES.items()},
    "schedulers": SCHEDULERS,
}
with open(sys.argv[1], "w") as f:
    json.dump(golden, f, indent=None, separators=(",", ":"))
    f.write("\n")
