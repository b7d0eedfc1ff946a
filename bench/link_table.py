#!/usr/bin/env python3
"""Turns bench/run_link_sweep.sh's log into step time measured against predicted, per strategy and
link rate. The prediction: each phase's compute time (forward T_f, backward T_b, the rest T_o, from
the strategy's step with the link unlimited), the bytes that leave a host while each phase
computes (F, B) and the parts of them nothing can hide (U_f, U_b), as the cost model gives them
(printed by strider_bench_fsdp), at the rate R the link was measured to deliver (a ring
all-gather between the hosts, printed by the sweep):
  max(T_f, (F - U_f) / R) + U_f / R + max(T_b, (B - U_b) / R) + U_b / R + T_o.
Hidden share: of the link time the limit added ((F + B) / R less the same bytes at the unlimited
link's rate), what did not lengthen the step against the unlimited run just before it.
The queue model (simulate()) replays the step instead: each process group's collectives run one at
a time in the order they are issued, each unit's compute waits for its gather, a launch waits for
the reduction two before it, and the units' bytes (printed unit by unit by strider_bench_fsdp)
travel at the rate the link was measured to deliver under that kind of traffic (the sweep's
strider_bench_collectives --link-patterns lines: the world's ring all-gather for gathers, its
reduce-scatter for reductions, its all-reduce for DDP's buckets, the concurrent replica
all-reduces for HYBRID_SHARD's, measured alone); without those lines, at R. Compute is split
over the units by their parameters (the root's at the end of forward and the start of backward:
the LM head). A second queue model (simulate_beside_compute()) moves each transfer at the rate
measured beside a compute thread on every rank (the sweep's --compute-load 1 lines) while the
step's compute thread is busy, and at the rate alone while it waits: on a machine whose every core
computes, the transfers' copies and the kernel's TCP work take the compute threads' cores.
  bench/link_table.py < link.log
"""
import json
import sys


def transfer_end(start, nbytes, rate_alone, rate_loaded, busy):
    """When nbytes issued at `start` have crossed the link, moving at rate_loaded while the compute
    thread is busy (the sorted, disjoint intervals `busy`) and at rate_alone while it waits."""
    t, left = start, float(nbytes)
    for b0, b1 in busy:
        if b1 <= t:
            continue
        if t < b0:  # compute idle until b0
            if t + left / rate_alone <= b0:
                return t + left / rate_alone
            left -= (b0 - t) * rate_alone
            t = b0
        if t + left / rate_loaded <= b1:
            return t + left / rate_loaded
        left -= (b1 - t) * rate_loaded
        t = b1
    return t + left / rate_alone


def simulate(units, rates, t_f, t_b, t_o, strategy, loaded_rates=None, busy=()):
    """Step time with the comm threads' queues: a process group's collectives run one at a time in
    the order they are issued (one queue per group: the world or shard group, and under
    HYBRID_SHARD the replica group), and what crosses the link waits for the link. Forward gathers
    the root, then each unit's gather is issued when the unit before it starts computing (forward
    prefetch, one ahead); backward runs the root's own part (the LM head) first, then the units in
    reverse, each unit's gather again issued when the one before it starts (BACKWARD_PRE) and its
    reduction when its backward ends. HYBRID_SHARD's all-reduce across replicas is issued when the
    unit's reduction settles: when the unit two later launches its own (two reductions in flight,
    fsdp TreeState), the last ones at the end of backward. DDP (no gathers, no root): buckets
    all-reduce in their listed order as backward reaches them. `rates` maps a collective kind
    (gather, reduce, replica) to the rate the link delivers under that traffic (bytes/s).
    With `loaded_rates` (the same kinds, measured beside a compute thread per rank) a transfer
    moves at those while the compute thread is busy, within the intervals `busy`, and at `rates`
    while it waits. Returns the step time and the compute thread's busy intervals."""
    total = float(sum(u["elements"] for u in units)) or 1.0
    fwd = {u["name"]: t_f * u["elements"] / total for u in units}
    bwd = {u["name"]: t_b * u["elements"] / total for u in units}
    ddp = strategy == "ddp"  # buckets: none is the root
    hybrid = strategy.startswith("hybrid")
    root = None if ddp else next((u for u in units if u["is_root"]), None)
    others = [u for u in units if ddp or not u["is_root"]]
    queue_free = {"main": 0.0, "replica": 0.0}
    link_free = 0.0
    computed = []  # this run's busy intervals of the compute thread

    def run(issued, nbytes, kind, queue="main"):
        nonlocal link_free
        start = max(issued, queue_free[queue])
        if nbytes > 0:
            start = max(start, link_free)
            link_free = (transfer_end(start, nbytes, rates[kind], loaded_rates[kind], busy) if loaded_rates
                         else start + nbytes / rates[kind])
        queue_free[queue] = link_free if nbytes > 0 else start
        return queue_free[queue]

    def compute(start, seconds):
        if seconds > 0:
            computed.append((start, start + seconds))
        return start + seconds

    # Forward.
    order = ([root] if root else []) + others
    t = 0.0
    ready = run(0.0, order[0]["gather"], "gather") if order else 0.0
    for i, u in enumerate(order):
        start = max(t, ready)
        if i + 1 < len(order):
            ready = run(start, order[i + 1]["gather"], "gather")
        t = compute(start, 0.0 if u is root else fwd[u["name"]])
    if root:
        t = compute(t, fwd[root["name"]])
    # Backward.
    back = others if ddp else list(reversed(others))
    ready = run(t, back[0]["regather"], "gather") if back else t
    if root:
        t = compute(t, bwd[root["name"]])
    launched = []  # reductions launched, in order, whose replica all-reduce is still to come
    for i, u in enumerate(back):
        start = max(t, ready)
        if i + 1 < len(back):
            ready = run(start, back[i + 1]["regather"], "gather")
        t = compute(start, bwd[u["name"]])
        if ddp:
            run(t, u["replica"], "replica")
            continue
        launched.append((u, run(t, u["reduce"], "reduce")))
        if len(launched) > 2:  # the launch waits for the oldest reduction to settle
            v, done = launched.pop(0)
            t = max(t, done)
            if hybrid:
                run(t, v["replica"], "replica", "replica")
    if root:
        launched.append((root, run(t, root["reduce"], "reduce")))
    if hybrid:
        for v, done in launched:
            run(max(t, done), v["replica"], "replica", "replica")
    end = max(t, *queue_free.values())
    compute(end, t_o)
    return end + t_o, computed


def simulate_beside_compute(units, rates, loaded_rates, t_f, t_b, t_o, strategy):
    """simulate() with each transfer's rate following the compute thread: the busy intervals
    come from the previous pass (the first pass: compute never overlaps), until the step time
    settles."""
    busy, step = [], None
    for _ in range(50):
        new_step, new_busy = simulate(units, rates, t_f, t_b, t_o, strategy, loaded_rates, busy)
        if step is not None and abs(new_step - step) <= 1e-4 * step:
            return new_step
        step, busy = new_step, new_busy
    print(f"link_table: the queue model beside compute did not settle for {strategy} in 50 passes "
          "(no figure)", file=sys.stderr)
    return None


def main():
    runs, measured, patterns, current, last_rate = [], {}, {}, None, None
    for line in sys.stdin:
        line = line.strip()
        if not line.startswith("{"):
            continue
        d = json.loads(line)
        if "link_measured_gbytes_per_s" in d:
            measured[d["rate"]] = d["link_measured_gbytes_per_s"]
            last_rate = d["rate"]
        elif "link_pattern" in d:  # follows its rate's link_measured line
            # Measured with a compute thread beside it, as in a step, where the sweep did so.
            kind = "under_compute" if d.get("under_compute") else "alone"
            patterns.setdefault(kind, {}).setdefault(last_rate, {})[d["link_pattern"]] = d["gbytes_per_s"] * 1e9
        elif "rate" in d:
            current = {"rate": d["rate"], "strategy": d["strategy"]}
            runs.append(current)
        elif d.get("link") == "units" and current is not None:
            current["units"] = d["units"]
        elif d.get("link") == "prediction" and current is not None:
            current.update(F=d["forward_bytes"], B=d["backward_bytes"], Uf=d["unhidden_forward_bytes"],
                           Ub=d["unhidden_backward_bytes"])
        elif "forward_s_per_step" in d and current is not None:
            current.update(step=d["step_s"], fwd=d["forward_s_per_step"], bwd=d["backward_s_per_step"],
                           waits=d.get("gather_wait_s_per_step", 0.0) + d.get("reduce_wait_s_per_step", 0.0))
    # Each limited run against its strategy's unlimited run just before it (REPEATS gives each its own).
    base_of, latest = {}, {}
    for r in runs:
        if r["rate"] == "none":  # a failed one leaves its round without a baseline
            latest[r["strategy"]] = r if "step" in r else None
        base_of[id(r)] = latest.get(r["strategy"])
    print("| strategy | link | measured link GB/s | MB leaving a host per step (forward + backward) | link time | "
          "step measured | predicted | predicted / measured | queue model | queue model / measured | "
          "queue model, rates beside compute | its / measured | communication hidden | hidden, from the waits |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    repeated = {}  # (strategy, rate) -> [(queue model / measured, hidden)], for the medians
    for r in runs:
        gbs = measured.get(r["rate"])
        rate_text = f"{gbs:.2f}" if gbs else "-"
        if "step" not in r or "F" not in r:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | - | - | failed | - | - | - | - | - | - | - | - |")
            continue
        mb = f"{(r['F'] + r['B']) / 1e6:.0f} ({r['F'] / 1e6:.0f} + {r['B'] / 1e6:.0f})"
        b = base_of[id(r)]
        if r["rate"] == "none" or not gbs or b is None:
            print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | - | {r['step']:.2f} s | (compute times) | - | "
                  f"- | - | - | - | - | {r['waits']:.2f} s waited |")
            continue
        rate = gbs * 1e9
        t_f, t_b = b["fwd"], b["bwd"]
        t_o = max(0.0, b["step"] - t_f - t_b)
        predicted = (max(t_f, (r["F"] - r["Uf"]) / rate) + r["Uf"] / rate +
                     max(t_b, (r["B"] - r["Ub"]) / rate) + r["Ub"] / rate + t_o)
        link = (r["F"] + r["B"]) / rate
        # The unlimited run has a link too (a veth pair moves about 1 GB/s here): what the limit
        # added is the difference of the two link times, and the step should have grown by no more.
        base_link = (r["F"] + r["B"]) / (measured["none"] * 1e9) if measured.get("none") else 0.0
        added = link - base_link
        # Under a twentieth of the step, what the limit added is lost in the host's drift: no figure.
        hidden = 1 - max(0.0, r["step"] - b["step"]) / added if added > 0.05 * b["step"] else None
        hidden_text = f"{max(0.0, hidden):.0%}" if hidden is not None else "- (link adds too little)"
        # The same from the run's own waits (the compute thread waiting for gathers and the last
        # reductions), against the unlimited run's: what the limit added that the step waited
        # for. Both come from within their runs, so the host's drift between runs cancels.
        waited = 1 - max(0.0, r["waits"] - b["waits"]) / added if added > 0.05 * b["step"] else None
        waited_text = (f"{max(0.0, waited):.0%} ({r['waits']:.2f} s)" if waited is not None
                       else f"- (link adds too little; {r['waits']:.2f} s)")
        hybrid = r["strategy"].startswith("hybrid")
        # The rate under each kind of traffic, else the ring's, measured alone; beside a compute
        # thread on every rank the rates fall (the world's all-gather to half at 4 Gbit/s), which
        # the second model applies only while the step computes.
        p = patterns.get("alone", {}).get(r["rate"], {})
        rates = {"gather": p.get("world_all_gather", rate), "reduce": p.get("world_reduce_scatter", rate),
                 "replica": p.get("replica_all_reduce" if hybrid else "world_all_reduce", rate)}
        queued = simulate(r["units"], rates, t_f, t_b, t_o, r["strategy"])[0] if "units" in r else None
        queued_text = f"{queued:.2f} s | {queued / r['step']:.2f}" if queued else "- | -"
        q = patterns.get("under_compute", {}).get(r["rate"], {})
        loaded = {"gather": q.get("world_all_gather"), "reduce": q.get("world_reduce_scatter"),
                  "replica": q.get("replica_all_reduce" if hybrid else "world_all_reduce")}
        # The kinds this strategy's transfers use: FULL_SHARD sends no replica traffic, DDP only that.
        kinds = ("replica",) if r["strategy"] == "ddp" else ("gather", "reduce", "replica") if hybrid else ("gather", "reduce")
        beside = (simulate_beside_compute(r["units"], rates, {k: loaded[k] or rates[k] for k in loaded}, t_f, t_b, t_o,
                                          r["strategy"])
                  if "units" in r and all(loaded[k] for k in kinds) else None)
        beside_text = f"{beside:.2f} s | {beside / r['step']:.2f}" if beside else "- | -"
        repeated.setdefault((r["strategy"], r["rate"]), []).append(
            (queued / r["step"] if queued else None, max(0.0, hidden) if hidden is not None else None))
        print(f"| {r['strategy']} | {r['rate']} | {rate_text} | {mb} | {link:.2f} s | {r['step']:.2f} s | "
              f"{predicted:.2f} s | {predicted / r['step']:.2f} | {queued_text} | {beside_text} | {hidden_text} | {waited_text} |")

    if patterns:
        print("\n| link | pattern | GB/s leaving a host, alone | beside a compute thread per rank |")
        print("|---|---|---|---|")
        for rate, rates in patterns.get("alone", {}).items():
            loaded = patterns.get("under_compute", {}).get(rate, {})
            for name, v in rates.items():
                text = f"{loaded[name] / 1e9:.3f}" if name in loaded else "-"
                print(f"| {rate} | {name} | {v / 1e9:.3f} | {text} |")
    if any(len(v) > 1 for v in repeated.values()):  # REPEATS > 1: the medians over the repeats
        print("\n| strategy | link | runs | queue model / measured (median, range) | hidden (median, range) |")
        print("|---|---|---|---|---|")
        def spread(values, fmt):
            values = sorted(x for x in values if x is not None)
            if not values:
                return "-"
            return f"{median(values):{fmt}} ({values[0]:{fmt}}-{values[-1]:{fmt}})"
        for (strategy, rate), v in repeated.items():
            print(f"| {strategy} | {rate} | {len(v)} | {spread((x for x, _ in v), '.2f')} | "
                  f"{spread((h for _, h in v), '.0%')} |")


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


if __name__ == "__main__":
    main()
