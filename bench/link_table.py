#!/usr/bin/env python3
"""Turns bench/run_link_sweep.sh's log into step time measured against predicted, per strategy and
link rate. The prediction: compute time T (the strategy's step with the link unlimited), the
bytes that leave a host per step B and the share of them nothing can hide U (the cost model's,
printed by strider_bench_fsdp), at the rate R: max(T, (B - U) / R) + U / R. Hidden share: of the
link time B / R, what did not lengthen the step: 1 - max(0, step - T) / (B / R).
  bench/link_table.py < link.log
"""
import json
import re
import sys


def rate_bytes_per_s(rate):
    m = re.fullmatch(r"([0-9.]+)([kmg]?)bit", rate)
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def main():
    runs, current = [], None
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if "rate" in d:
            current = {"rate": d["rate"], "strategy": d["strategy"]}
            runs.append(current)
        elif d.get("link") == "prediction" and current is not None:
            current.update(bytes=d["bytes_leaving_host_per_step"], unhidden=d["unhidden_bytes_leaving_host_per_step"],
                           step=d["step_s"])
    unlimited = {r["strategy"]: r["step"] for r in runs if r["rate"] == "none" and "step" in r}
    print("| strategy | link | MB leaving a host per step | link time | step measured | predicted | predicted / measured | communication hidden |")
    print("|---|---|---|---|---|---|---|---|")
    for r in runs:
        if "step" not in r:
            print(f"| {r['strategy']} | {r['rate']} | - | - | failed | - | - | - |")
            continue
        rate = rate_bytes_per_s(r["rate"])
        t = unlimited.get(r["strategy"])
        mb = r["bytes"] / 1e6
        if rate is None or t is None:
            print(f"| {r['strategy']} | {r['rate']} | {mb:.0f} | - | {r['step']:.2f} s | (compute time T) | - | - |")
            continue
        link = r["bytes"] / rate
        predicted = max(t, (r["bytes"] - r["unhidden"]) / rate) + r["unhidden"] / rate
        hidden = 1 - max(0.0, r["step"] - t) / link if link > 0 else 1.0
        print(f"| {r['strategy']} | {r['rate']} | {mb:.0f} | {link:.2f} s | {r['step']:.2f} s | {predicted:.2f} s | "
              f"{predicted / r['step']:.2f} | {max(0.0, hidden):.0%} |")


if __name__ == "__main__":
    main()
