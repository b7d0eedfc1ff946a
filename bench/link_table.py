#!/usr/bin/env python3
"""Turns bench/run_link_sweep.sh's log into step time measured against predicted, per strategy and
link rate. The prediction: each phase's compute time (forward T_f, backward T_b, the rest T_o, from
the strategy's step with the link unlimited), the bytes that leave a host while each phase
computes (F, B) and the parts of them nothing can hide (U_f, U_b), as the cost model gives them
(printed by strider_bench_fsdp), at the rate R the link was measured to deliver (a ring
all-gather between the hosts, printed by the sweep):
  max(T_f, (F - U_f) / R) + U_f / R + max(T_b, (B - U_b) / R) + U_b / R + T_o.
Hidden share: of the link time (F + B) / R, what did not lengthen the step.
The queue model (simulate()) replays the step instead: a rank's collectives run one at a time in
the order they are issued, each unit's compute waits for its gather, and the units' bytes (printed
unit by unit by strider_bench_fsdp) travel at R; compute is split over the units by their
parameters (the root's at the end of forward and the start of backward: the LM head).
  bench/link_table.py < link.log
"""
import json
import sys


def simulate(units, rate, t_f, t_b, t_o):
    """Step time with one comm queue per rank: forward gathers the root, then each unit's gather is
    issued when the unit before it starts computing (forward prefetch, one ahead); backward runs
    the root's own part (the LM head) first, then the units in reverse, each unit's gather again
    issued when the one before it starts (BACKWARD_PRE) and its reduction (and, across replicas,
    its all-reduce) when its backward ends; the root reduces last. DDP (no gathers, no root):
    buckets reduce in their listed order as backward reaches them."""
    total = float(sum(u["elements"] for u in units)) or 1.0
    fwd = {u["name"]: t_f * u["elements"] / total for u in units}
    bwd = {u["name"]: t_b * u["elements"] / total for u in units}
    root = next((u for u in units if u["is_root"]), None)
    others = [u for u in units if not u["is_root"]]
    ddp = root is None and all(u["gather"] == 0 and u["regather"] == 0 for u in units)
    queue_free = 0.0

    def run(issued, nbytes):
        nonlocal queue_free
        queue_free = max(issued, queue_free) + nbytes / rate
        return queue_free

    # Forward.
    order = ([root] if root else []) + others
    t = 0.0
    ready = run(0.0, order[0]["gather"]) if order else 0.0
    for i, u in enumerate(order):
        start = max(t, ready)
        if i + 1 < len(order):
            ready = run(start, order[i + 1]["gather"])
        t = start + (0.0 if u is root else fwd[u["name"]])
    if root:
        t += fwd[root["name"]]
    # Backward.
    back = others if ddp else list(reversed(others))
    ready = run(t, back[0]["regather"]) if back else t
    if root:
        t += bwd[root["name"]]
    for i, u in enumerate(back):
        start = max(t, ready)
        if i + 1 < len(back):
            ready = run(start, back[i + 1]["regather"])
        t = start + bwd[u["name"]]
        run(t, u["reduce"])
        run(t, u["replica"])
    if root:
        run(t, root["reduce"])
        run(t, root["replica"])
    return max(t, queue_free) + t_o


def main():
    runs, measured, current = [], {}, None
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if "link_measured_gbytes_per_s" in d:
            measured[d["rate"]] = d["link_measured_gbytes_per_s"]
        elif "rate" in d:
            current = {"rate": d["rate"], "strategy": d["strategy"]}
            runs.append(current)
        elif d.get("link") == "units" and current is not None:
            current["units"] = d["units"]
        elif d.get("link") == "prediction" and current is not None:
            current.update(F=d["forward_bytes"], B=d["backward_bytes"], Uf=d["unhidden_forward_bytes"],
                           Ub=d["unhidden_backward_bytes"])
        elif "forward_s_per_step" in d and current is not None:
            current.update(step=d["step_s"], fwd=d["forward_s_per_step"], bwd=d["backward_s_per_step"])
    base = {r["strategy"]: r for r in runs if r["rate"] == "none" and "step" in r}
    print("| strategy | link | measured link GB/s | MB leaving a host per step (forward + backward) | link time | "
          "step measured | predicted | predicted / measured | queue model | queue model / measured | "
          "communication hidden |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        gbs = measured.get(r["rate"])
        rate_text = f"{gbs:.2f}" if gbs else "-"
        if "step" not in r or "F" not in r:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | - | - | failed | - | - | - | - | - |")
            continue
        mb = f"{(r['F'] + r['B']) / 1e6:.0f} ({r['F'] / 1e6:.0f} + {r['B'] / 1e6:.0f})"
        b = base.get(r["strategy"])
        if r["rate"] == "none" or not gbs or b is None:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | - | {r['step']:.2f} s | (compute times) | - | "
                  "- | - | - |")
            continue
        rate = gbs * 1e9
        t_f, t_b = b["fwd"], b["bwd"]
        t_o = max(0.0, b["step"] - t_f - t_b)
        predicted = (max(t_f, (r["F"] - r["Uf"]) / rate) + r["Uf"] / rate +
                     max(t_b, (r["B"] - r["Ub"]) / rate) + r["Ub"] / rate + t_o)
        link = (r["F"] + r["B"]) / rate
        hidden = 1 - max(0.0, r["step"] - b["step"]) / link if link > 0 else 1.0
        queued = simulate(r["units"], rate, t_f, t_b, t_o) if "units" in r else None
        queued_text = f"{queued:.2f} s | {queued / r['step']:.2f}" if queued else "- | -"
        print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | {link:.2f} s | {r['step']:.2f} s | "
              f"{predicted:.2f} s | {predicted / r['step']:.2f} | {queued_text} | {max(0.0, hidden):.0%} |")


if __name__ == "__main__":
    main()
