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
  and after every step() until the schedule ends. Each case is also run a second time with a
  save/resume in the middle (optimizer.state_dict() and the scheduler's state_dict() loaded into
  fresh ones built the same way); the script asserts the resumed run gives the same values.
"plateau": per ReduceLROnPlateau case, the metric passed to every step(), each group's lr after
  every step, and the scheduler's state (best, num_bad_epochs, cooldown_counter, last_epoch)
  after every step, again checked against a run resumed in the middle.
"""
import json
import math
import sys
import warnings

import torch
from torch.optim.lr_scheduler import (ChainedScheduler, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
                                      ExponentialLR, LambdaLR, LinearLR, MultiStepLR, OneCycleLR, PolynomialLR,
                                      ReduceLROnPlateau, SequentialLR, StepLR)

# SequentialLR calls step(0) at its milestones, which warns that step's epoch argument is deprecated.
warnings.filterwarnings("ignore", category=UserWarning)

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
    # The same run saved and resumed in the middle: PyTorch's resume restores each group's lr from
    # the optimizer's state dict and the scheduler's counters, so the recursive forms carry on.
    first, first_sched = make_opt(), None
    first_sched = make_sched(first)
    for _ in range(steps // 2):
        first.step()
        first_sched.step()
    opt, sched = make_opt(), None
    sched = make_sched(opt)
    opt.load_state_dict(first.state_dict())
    sched.load_state_dict(first_sched.state_dict())
    resumed = out[:steps // 2 + 1]
    for _ in range(steps - steps // 2):
        opt.step()
        sched.step()
        resumed.append(snapshot())
    assert resumed == out, "a save/resume changed the schedule"
    return {"values": out, "param_groups": state_dict_json(opt)["param_groups"]}


def two_groups(cls, lr1, **defaults):
    """cls over two groups: a [2] with the defaults, b [3] with lr lr1."""
    def make():
        a, b = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
        return cls([dict(params=[a]), dict(params=[b], lr=lr1)], **defaults)
    return make


def three_groups(cls, lrs, **defaults):
    """cls over three groups, a [2], b [3], c [1], with lrs lrs[0], lrs[1], lrs[2]."""
    def make():
        params = [torch.zeros(n, requires_grad=True) for n in (2, 3, 1)]
        return cls([dict(params=[p], lr=lr) for p, lr in zip(params, lrs)], **defaults)
    return make


SGD3 = three_groups(torch.optim.SGD, [0.1, 0.05, 0.3])
ADAM3 = three_groups(torch.optim.Adam, [0.01, 0.02, 0.003])

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
    "step_lr_gamma_tenth": schedule(SGD3, lambda o: StepLR(o, 3, gamma=0.1), 33),
    "multi_step_lr": schedule(SGD3, lambda o: MultiStepLR(o, [4, 9, 17], gamma=0.3), 30),
    "exponential_lr": schedule(ADAM3, lambda o: ExponentialLR(o, 0.9), 32),
    "constant_lr": schedule(SGD3, lambda o: ConstantLR(o, factor=0.25, total_iters=6), 30),
    "constant_lr_defaults": schedule(ADAM3, lambda o: ConstantLR(o), 30),
    "linear_lr_warmup": schedule(SGD3, lambda o: LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=20), 32),
    "linear_lr_decay": schedule(ADAM3, lambda o: LinearLR(o, start_factor=1.0, end_factor=0.05, total_iters=11), 30),
    "linear_lr_defaults": schedule(SGD3, lambda o: LinearLR(o), 30),
    "polynomial_lr_square": schedule(SGD3, lambda o: PolynomialLR(o, total_iters=20, power=2.0), 32),
    "polynomial_lr_defaults": schedule(ADAM3, lambda o: PolynomialLR(o), 30),
    "cosine_annealing_eta_min": schedule(SGD3, lambda o: CosineAnnealingLR(o, T_max=10, eta_min=0.001), 45),
    "cosine_annealing_past_t_max": schedule(ADAM3, lambda o: CosineAnnealingLR(o, T_max=7), 40),
    "cosine_warm_restarts_t_mult": schedule(
        SGD3, lambda o: CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.0005), 40),
    "cosine_warm_restarts": schedule(ADAM3, lambda o: CosineAnnealingWarmRestarts(o, T_0=7), 30),
    "sequential_linear_cosine": schedule(
        SGD3, lambda o: SequentialLR(o, [LinearLR(o, start_factor=0.1, total_iters=5),
                                         CosineAnnealingLR(o, T_max=20, eta_min=1e-4)], milestones=[5]), 36),
    "sequential_three": schedule(
        ADAM3, lambda o: SequentialLR(o, [ConstantLR(o, factor=0.5, total_iters=3), ExponentialLR(o, 0.9),
                                          StepLR(o, 4, gamma=0.5)], milestones=[6, 15]), 32),
    "sequential_lambda_restarts": schedule(
        SGD3, lambda o: SequentialLR(o, [LambdaLR(o, lambda s: (s + 1) / 8.0),
                                         CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.01)], milestones=[8]), 30),
    "chained_constant_exponential": schedule(
        SGD3, lambda o: ChainedScheduler([ConstantLR(o, factor=0.5, total_iters=4), ExponentialLR(o, 0.95)]), 32),
    "chained_cosine_multi_step": schedule(
        ADAM3, lambda o: ChainedScheduler([CosineAnnealingLR(o, T_max=12, eta_min=0.001),
                                           MultiStepLR(o, [10, 20], gamma=0.5)]), 36),
}

# A validation loss that falls, stalls, rises and falls again (and the same turned upside down
# for mode "max"), with a NaN step: each of ReduceLROnPlateau's counters gets exercised.
LOSSES = [1.0, 0.9, 0.85, 0.8499, 0.85, 0.86, 0.84, 0.84, 0.841, 0.8399, 0.83, 0.83, 0.83, 0.83, 0.83, 0.82,
          0.8201, 0.9, 0.95, 0.7, 0.69995, 0.69, 0.69, 0.69, float("nan"), 0.69, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5,
          0.5, 0.49, 0.5, 0.5, 0.5, 0.5]


def plateau(make_opt, options, metrics):
    def run(metrics_done, opt, sched, out):
        for m in metrics_done:
            opt.step()
            sched.step(m)
            out.append({"lr": [g["lr"] for g in opt.param_groups],
                        "state": {k: sched.state_dict()[k]
                                  for k in ("best", "num_bad_epochs", "cooldown_counter", "last_epoch")}})
        return out

    opt = make_opt()
    out = run(metrics, opt, ReduceLROnPlateau(opt, **options), [])
    half = len(metrics) // 2
    first = make_opt()
    first_sched = ReduceLROnPlateau(first, **options)
    run(metrics[:half], first, first_sched, [])
    opt = make_opt()
    sched = ReduceLROnPlateau(opt, **options)
    opt.load_state_dict(first.state_dict())
    sched.load_state_dict(first_sched.state_dict())
    resumed = run(metrics[half:], opt, sched, out[:half])

    def same(a, b):  # NaN-aware
        return json.dumps(a) == json.dumps(b)
    assert same(resumed, out), "a save/resume changed ReduceLROnPlateau"
    for entry in out:  # JSON has no inf: the best before any finite metric is spelled out
        best = entry["state"]["best"]
        if math.isinf(best) or math.isnan(best):
            entry["state"]["best"] = str(best)
    return {"options": {k: v for k, v in options.items()}, "metrics": [str(m) if math.isnan(m) else m for m in metrics],
            "steps": out}


PLATEAU = {
    "min_rel_defaults": plateau(SGD3, dict(patience=2), LOSSES),
    "min_abs_cooldown_min_lr": plateau(
        SGD3, dict(factor=0.5, patience=1, threshold=0.005, threshold_mode="abs", cooldown=2,
                   min_lr=[0.02, 0.0, 0.1]), LOSSES),
    "max_rel_eps": plateau(ADAM3, dict(mode="max", factor=0.3, patience=0, threshold=0.01, min_lr=1e-3, eps=1e-3),
                           [-x for x in LOSSES]),
    "max_abs": plateau(ADAM3, dict(mode="max", factor=0.7, patience=3, threshold=0.02, threshold_mode="abs",
                                   cooldown=1), [-x for x in LOSSES]),
}

golden = {
    "torch_version": torch.__version__,
    "trajectories": {name: trajectory(*case) for name, case in CASES.items()},
    "schedulers": SCHEDULERS,
    "plateau": PLATEAU,
}
with open(sys.argv[1], "w") as f:
    json.dump(golden, f, indent=None, separators=(",", ":"))
    f.write("\n")
