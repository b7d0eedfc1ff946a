#!/usr/bin/env python3
"""Turns bench/run_link_sweep.sh's log into step time measured against predicted, per strategy and
link rate. The prediction: each phase's compute time (forward T_f, backward T_b, the rest T_o, from
the strategy's step with the link unlimited), the bytes that leave a host while each phase
computes (F, B) and the parts of them nothing can hide (U_f, U_b), as the cost model gives them
(printed by strider_bench_fsdp), at the rate R the link was measured to deliver (a ring
all-gather between the hosts, printed by the sweep):
  max(T_f, (F - U_f) / R) + U_f / R + max(T_b, (B - U_b) / R) + U_b / R + T_o.
Hidden share: of the link time (F + B) / R, what did not lengthen the step.
  bench/link_table.py < link.log
"""
import json
import sys


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
        elif d.get("link") == "prediction" and current is not None:
            current.update(F=d["forward_bytes"], B=d["backward_bytes"], Uf=d["unhidden_forward_bytes"],
                           Ub=d["unhidden_backward_bytes"])
        elif "forward_s_per_step" in d and current is not None:
            current.update(step=d["step_s"], fwd=d["forward_s_per_step"], bwd=d["backward_s_per_step"])
    base = {r["strategy"]: r for r in runs if r["rate"] == "none" and "step" in r}
    print("| strategy | link | measured link GB/s | MB leaving a host per step (forward + backward) | link time | "
          "step measured | predicted | predicted / measured | communication hidden |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        gbs = measured.get(r["rate"])
        rate_text = f"{gbs:.2f}" if gbs else "-"
        if "step" not in r or "F" not in r:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | - | - | failed | - | - | - |")
            continue
        mb = f"{(r['F'] + r['B']) / 1e6:.0f} ({r['F'] / 1e6:.0f} + {r['B'] / 1e6:.0f})"
        b = base.get(r["strategy"])
        if r["rate"] == "none" or not gbs or b is None:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | - | {r['step']:.2f} s | (compute times) | - | - |")
            continue
        rate = gbs * 1e9
        t_f, t_b = b["fwd"], b["bwd"]
        t_o = max(0.0, b["step"] - t_f - t_b)
        predicted = (max(t_f, (r["F"] - r["Uf"]) / rate) + r["Uf"] / rate +
                     max(t_b, (r["B"] - r["Ub"]) / rate) + r["Ub"] / rate + t_o)
        link = (r["F"] + r["B"]) / rate
        hidden = 1 - max(0.0, r["step"] - b["step"]) / link if link > 0 else 1.0
        print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | {link:.2f} s | {r['step']:.2f} s | "
              f"{predicted:.2f} s | {predicted / r['step']:.2f} | {max(0.0, hidden):.0%} |")


if __name__ == "__main__":
    main()
