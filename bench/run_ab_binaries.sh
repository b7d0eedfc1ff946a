#!/bin/bash
# Two builds of a benchmark side by side: ROUNDS rounds, each running OLD then NEW (then NEW then
# OLD in the next round, so neither always goes first) with the same arguments, under mpirun -np
# RANKS with one thread per rank. Prints each run's JSON line prefixed with "old " or "new ".
#   bench/run_ab_binaries.sh OLD_BINARY NEW_BINARY ROUNDS RANKS [BENCH ARGS...]
#   e.g. cp build/bench/strider_bench_fsdp /tmp/old_bench   (before the change, then rebuild)
#        bench/run_ab_binaries.sh /tmp/old_bench build/bench/strider_bench_fsdp 4 2 --strategy full_shard
# MPIRUN replaces the launcher, e.g. across emulated hosts (scripts/emulated-hosts.sh up 2 1gbit):
#   MPIRUN="scripts/emulated-hosts.sh mpirun --host h0:2,h1:2" bench/run_ab_binaries.sh OLD NEW 2 4 ...
set -euo pipefail
old=$1 new=$2 rounds=$3 ranks=$4
read -r -a launcher <<< "${MPIRUN:-mpirun --oversubscribe --bind-to none}"
shift 4
args=("$@")
run() {  # TAG BINARY
  local line
  line=$(OMP_NUM_THREADS=1 "${launcher[@]}" -np "$ranks" -x OMP_NUM_THREADS=1 "$2" "${args[@]}" 2>/dev/null | tail -n 1)
  echo "$1 $line"
}
for ((r = 0; r < rounds; ++r)); do
  if ((r % 2 == 0)); then
    run old "$old"; run new "$new"
  else
    run new "$new"; run old "$old"
  fi
done
