"""Markdown table of bench/run_deterministic_cost.sh's JSON lines: per strategy and shape, the
median step time in normal and deterministic mode and their ratio (each round's pair was run
back to back, so the ratio is the median of the per-round ratios)."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(lambda: {0: [], 1: []})
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{") or "step_s" not in line:
        continue
    j = json.loads(line)
    runs[(j["strategy"], j["seq"], j["batch"])][j["deterministic"]].append(j)

print("| strategy | seq x batch/rank | normal step (s) | deterministic step (s) | ratio (median of rounds) "
      "| peak/formula normal → deterministic | sent/step normal → deterministic (MB) |")
print("|---|---|---|---|---|---|---|")
for (strategy, seq, batch), modes in sorted(runs.items()):
    pairs = list(zip(modes[0], modes[1]))
    if not pairs:
        continue
    ratios = [d["step_s"] / n["step_s"] for n, d in pairs]
    med = lambda mode, key: statistics.median(r[key] for r in modes[mode])
    print(f"| {strategy} | {seq} x {batch} | {med(0, 'step_s'):.3f} | {med(1, 'step_s'):.3f} | "
          f"{statistics.median(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)}) | "
          f"{med(0, 'peak_over_formula'):.2f} → {med(1, 'peak_over_formula'):.2f} | "
          f"{med(0, 'sent_bytes_per_step') / 1e6:.0f} → {med(1, 'sent_bytes_per_step') / 1e6:.0f} |")
