#!/bin/bash
# GPT-2-small training steps across 2 emulated hosts x 2 ranks (RANKS_PER_HOST=1: x 1 rank, a
# core per rank on a 2-core machine) (scripts/emulated-hosts.sh, as
# root) with the link unlimited and limited by tc tbf, per strategy; bench/link_table.py puts
# each step time beside the cost model's prediction at the rate the link was measured to deliver.
# One JSON line per run, each after a {"rate": ...} line.
#   [RATES="none 25gbit 10gbit 1gbit"] [STRATEGIES="full_shard hybrid_shard ddp"] [REPEATS=1] \
#     bench/run_link_sweep.sh > link.log && bench/link_table.py < link.log
# REPEATS runs each strategy's rates that many times in turn (none, 10gbit, none, 10gbit, ...), so
# each limited run has an unlimited one of its own a minute before it on a host whose speed drifts.
set -euo pipefail
cd "$(dirname "$0")/.."
rates=${RATES:-none 25gbit 10gbit 1gbit}
strategies=${STRATEGIES:-full_shard hybrid_shard ddp}
repeats=${REPEATS:-1}
per_host=${RANKS_PER_HOST:-2}
[[ $per_host =~ ^[1-9][0-9]*$ ]] || { echo "RANKS_PER_HOST must be a positive count, got '$per_host'" >&2; exit 2; }
ranks=$((2 * per_host))
shape=(--n-layer 12 --n-embd 768 --batch 1 --seq 256 --warmup 1 --steps 3)
hosts=scripts/emulated-hosts.sh
trap '"$hosts" down' EXIT
"$hosts" down
"$hosts" up 2 >&2
# What the link delivers at each rate: a ring all-gather of 64 MiB between the hosts, 1 rank each
# (one TCP flow each way, as a ring across 2 hosts has), its bus bandwidth in GB/s, then the rate
# under each strategy's traffic pattern (bench/collectives_bench.cpp link_patterns).
for rate in $rates; do
  "$hosts" rate "$rate"
  gbs=$("$hosts" mpirun --host h0:1,h1:1 -np 2 -x OMP_NUM_THREADS=1 build/bench/strider_bench_collectives \
          --max-mib 64 --reps 3 2>/dev/null | awk '$1 == "all_gather" {v = $4} END {print v}')
  echo "{\"rate\":\"$rate\",\"link_measured_gbytes_per_s\":${gbs:-null}}"
  # And under each strategy's own traffic, as many ranks per host as the steps run: the world's rings
  # (FULL_SHARD, DDP) and the replica groups' all-reduces at once (HYBRID_SHARD).
  # Alone, then with a compute thread on every rank beside the transfers, as in a step (the
  # cores' contention): bench/link_table.py's second queue model takes both.
  for load in 0 1; do
    "$hosts" mpirun --host "h0:$per_host,h1:$per_host" -np "$ranks" -x OMP_NUM_THREADS=1 build/bench/strider_bench_collectives \
      --link-patterns 1 --max-mib 64 --reps 5 --compute-load $load 2>/dev/null | grep '^{"link_pattern"' || true
  done
done
# Each strategy at every rate back to back (the link's limit changed in place), so the unlimited
# run whose compute times the model uses is minutes, not a whole sweep, from the limited ones on
# a host whose speed drifts.
for strategy in $strategies; do
  for ((k = 0; k < repeats; ++k)); do
    for rate in $rates; do
      "$hosts" rate "$rate"
      echo "{\"rate\":\"$rate\",\"strategy\":\"$strategy\"}"
      timeout 1800 "$hosts" mpirun --host "h0:$per_host,h1:$per_host" -np "$ranks" -x OMP_NUM_THREADS=1 \
        build/bench/strider_bench_fsdp --strategy "$strategy" "${shape[@]}"
    done
  done
done
