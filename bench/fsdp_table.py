"""Reads JSON lines from strider_bench_fsdp and fsdp_pytorch_ddp.py (stdin) and prints the
markdown table of docs/benchmarks.md: median step time and memory per configuration, with
ratios against strider's DDP run.

    bench/run_fsdp_sweep.sh > sweep.log; python3 bench/fsdp_table.py < sweep.log
"""
import json
import statistics
import sys
from collections import defaultdict


def key(r):
    fw = r.get("framework", "strider").split("-")[0]
    name = r["strategy"]
    if fw == "strider" and name == "full_shard":
        name += " prefetch" if r.get("prefetch") else " no prefetch"
        if r.get("offload"):
            name += " + offload"
    return (fw, name, r.get("batch", 2), r["params"])


runs = defaultdict(list)
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        runs[key(r)].append(r)

GB = 1e9
ddp = {}
for (fw, name, batch, params), rs in runs.items():
    if fw == "strider" and name == "ddp":
        ddp[(batch, params)] = rs
print("| framework | strategy | batch/rank | params | runs | step s (median) | step vs strider DDP"
      " | peak MB (allocator) | formula MB | peak/formula | RSS anon MB | RSS file MB | anon vs DDP |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (fw, name, batch, params), rs in sorted(runs.items(), key=lambda kv: (kv[0][3], kv[0][2], kv[0][0] != "strider", kv[0][1])):
    step = statistics.median(r["step_s"] for r in rs)
    base = ddp.get((batch, params))
    base_step = statistics.median(r["step_s"] for r in base) if base else None
    anon = statistics.median(r.get("rss_anon_bytes", r.get("peak_rss_bytes", 0)) for r in rs)
    base_anon = statistics.median(r["rss_anon_bytes"] for r in base) if base else None
    peak = rs[0].get("peak_bytes")
    formula = rs[0].get("formula_bytes")
    cells = [fw, name, str(batch), f"{params / 1e6:.0f}M", str(len(rs)), f"{step:.2f} ({min(r['step_s'] for r in rs):.2f}-{max(r['step_s'] for r in rs):.2f})",
             f"{step / base_step:.2f}" if base_step else "",
             f"{peak / 1e6:.0f}" if peak else "", f"{formula / 1e6:.0f}" if formula else "",
             f"{peak / formula:.2f}" if peak and formula else "",
             f"{anon / 1e6:.0f}", f"{rs[0]['rss_file_bytes'] / 1e6:.0f}" if "rss_file_bytes" in rs[0] else "",
             f"{anon / base_anon:.2f}" if base_anon else ""]
    print("| " + " | ".join(cells) + " |")
