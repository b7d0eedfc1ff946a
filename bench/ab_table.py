#!/usr/bin/env python3
"""Summarizes bench/run_ab_binaries.sh output (lines "old {json}" / "new {json}" from
strider_bench_fsdp): per build, the median step time with its range, the allocator's peak, the
backward phase, FSDP's own copies, and the new/old ratio of the medians.
Usage: bench/ab_table.py < ab.log"""
import json
import statistics
import sys

runs = {"old": [], "new": []}
order = []  # (tag, run) in the order they ran: consecutive pairs are one round
for line in sys.stdin:
    tag, _, rest = line.partition(" ")
    if tag in runs and rest.strip().startswith("{"):
        runs[tag].append(json.loads(rest))
        order.append((tag, runs[tag][-1]))
if not runs["old"] or not runs["new"]:
    sys.exit("need runs of both builds")


def med(tag, key):
    return statistics.median(r[key] for r in runs[tag])


first = runs["old"][0]
print(f"{first['strategy']}, {first['ranks']} ranks, {first['params'] / 1e6:.1f}M parameters, batch {first['batch']} x "
      f"seq {first['seq']}, dtype {first['dtype']}, isa {first['isa']}, {len(runs['old'])} runs of each build\n")
print("| build | step s median (min-max) | backward s | peak MB (allocator) | peak/formula | RSS anon MB | "
      "FSDP copies MB/step | copy s/step |")
print("|---|---|---|---|---|---|---|---|")
for tag in ("old", "new"):
    steps = [r["step_s"] for r in runs[tag]]
    print(f"| {tag} | {statistics.median(steps):.3f} ({min(steps):.3f}-{max(steps):.3f}) | "
          f"{med(tag, 'backward_s_per_step'):.3f} | {max(r['peak_bytes'] for r in runs[tag]) / 2**20:.1f} | "
          f"{med(tag, 'peak_over_formula'):.3f} | {med(tag, 'rss_anon_bytes') / 2**20:.0f} | "
          f"{med(tag, 'copied_bytes_per_step') / 2**20:.1f} | {med(tag, 'copy_s_per_step'):.3f} |")
# Each round ran both builds back to back: the ratio within a round cancels slow drifts of the load.
paired = []
for (ta, a), (tb, b) in zip(order[0::2], order[1::2]):
    if {ta, tb} == {"old", "new"}:
        new, old = (a, b) if ta == "new" else (b, a)
        paired.append(new["step_s"] / old["step_s"])
print(f"\nnew/old: step {med('new', 'step_s') / med('old', 'step_s'):.3f} (medians), per round "
      f"{statistics.median(paired):.3f} (median of {', '.join(f'{x:.2f}' for x in paired)}), "
      f"peak {max(r['peak_bytes'] for r in runs['new']) / max(r['peak_bytes'] for r in runs['old']):.4f}")
