"""Reads strider_bench_fsdp's JSON lines from bench/run_strategy_sweep.sh (stdin) and prints the
strategy table of docs/benchmarks.md: per rank count and strategy, the median step time and its
ratio to DDP's at the same rank count, the per-rank allocator peak against fsdp::memory_formula
(activations are the difference), and the bytes sent per step against fsdp::bytes_sent_per_step,
also as a multiple of the parameter bytes (ZeRO's 2 and 3).

    bench/run_strategy_sweep.sh > strategies.log; python3 bench/strategy_table.py < strategies.log
"""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        runs[(r["ranks"], r["strategy"], r.get("shard_group_size", 0))].append(r)

MB = 1e6
print("| ranks | strategy | runs | step s (median) | vs DDP | peak MB | formula MB | peak/formula"
      " | sent MB/step | formula MB | sent / (4 x params) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
order = ["ddp", "no_shard", "shard_optimizer", "shard_grad_op", "full_shard", "hybrid_shard", "hybrid_shard_grad_op"]
for (ranks, strategy, group), rs in sorted(runs.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
    step = statistics.median(r["step_s"] for r in rs)
    ddp = runs.get((ranks, "ddp", 0))
    vs = step / statistics.median(r["step_s"] for r in ddp) if ddp else float("nan")
    r = rs[0]
    name = strategy + (f" (groups of {group})" if group else "")
    print(f"| {ranks} | {name} | {len(rs)} | {step:.3f} | {vs:.2f} | {r['peak_bytes'] / MB:.0f} | "
          f"{r['formula_bytes'] / MB:.0f} | {r['peak_over_formula']:.3f} | {r['sent_bytes_per_step'] / MB:.1f} | "
          f"{r['sent_formula_bytes'] / MB:.1f} | {r['sent_bytes_per_step'] / (4 * r['params']):.2f} |")
