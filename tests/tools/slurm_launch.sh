#!/usr/bin/env bash
# Under Slurm (a one-machine cluster, scripts/slurm-cluster.sh: slurmctld + slurmd, PMIx):
#  1. `srun --mpi=pmix -n 4 strider train` in deterministic mode gives the one-process digests;
#  2. `sbatch` of a script running `strider launch -n 3 -- strider train ...` (which starts the
#     ranks with srun inside the allocation) survives kill -9 of a rank: it restarts from the
#     latest checkpoint and ends with the same digests.
# Exits 77 (skipped) without root or slurm-wlm.
# Usage: slurm_launch.sh STRIDER WORK_DIR
set -uo pipefail
strider=$(readlink -f "$1") work=$2
cluster=$(dirname "$(readlink -f "$0")")/../../scripts/slurm-cluster.sh
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
if [ "$(id -u)" -ne 0 ] || ! installed slurm-wlm || ! installed munge; then
  echo "skipped: the Slurm test needs root and Debian's slurm-wlm and munge, installed and configured"
  echo "(scripts/install-deps.sh --slurm installs them; CI's scripts/run-tests.sh does)"
  exit 77
fi
rm -rf "$work"; mkdir -p "$work"
"$cluster" up "$work/cluster" 4 || { echo "could not start the Slurm cluster"; tail -n 20 "$work"/cluster/log/*; exit 1; }
trap '"$cluster" down "$work/cluster"' EXIT
eval "$("$cluster" env "$work/cluster")"
export OMP_NUM_THREADS=1
train=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-embd 64 --seq 32
       --batch-size 12 --optimizer adamw --lr 1e-3 --fsdp-min-params 10000 --epochs 1 --limit-batches 60 --json
       --deterministic --micro-batches 12 --fsdp full_shard --checkpoint-every 4 --no-progress --heartbeat-timeout 3)
digests() { sed -n 's/.*"optimizer_sha256":"\([0-9a-f]*\)".*"params_sha256":"\([0-9a-f]*\)".*/\1 \2/p' <<< "$1"; }
want=$(digests "$("$strider" "${train[@]}" --out "$work/alone" | tail -n 1)")
echo "one process: $want"
failures=0

got=$(digests "$(timeout 300 srun --mpi=pmix -n 4 "$strider" "${train[@]}" --out "$work/srun" 2> "$work/srun.err" | tail -n 1)")
if [ "$got" = "$want" ]; then echo "srun -n 4: same digests"
else echo "srun -n 4: FAILED: '$got'"; tail -n 10 "$work/srun.err"; failures=$((failures + 1)); fi

run="$work/batch"
cat > "$work/job.sh" <<JOB
#!/bin/bash
#SBATCH --ntasks=3 --output=$run.out --error=$run.err
exec "$strider" launch -n 3 --max-restarts 2 -- "$strider" ${train[*]} --out "$run"
JOB
sbatch --wait "$work/job.sh" > /dev/null &
batch=$!
for _ in $(seq 1 1200); do ls -d "$run"/checkpoint-* > /dev/null 2>&1 && break; sleep 0.05; done
# A rank, never the launcher (its command line holds the trainer's after "--"): the program
# itself must be "strider train".
victim=$(pgrep -f -- "--out $run" | while read -r p; do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = strider ] && \
           tr '\0' ' ' < /proc/"$p"/cmdline | grep -q "^[^ ]*strider train " && echo "$p"; done | shuf -n 1)
kill -9 "$victim"
wait "$batch"; code=$?
got=$(digests "$(grep optimizer_sha256 "$run.out" | tail -n 1)")
restart=$(grep -m1 "strider launch: restart 1" "$run.err")
echo "sbatch with strider launch, kill -9 of a rank: exit $code; ${restart:-no restart logged}"
if [ $code -ne 0 ] || [ "$got" != "$want" ] || [ -z "$restart" ]; then
  echo "  FAILED: digests '$got'"; tail -n 15 "$run.err"; failures=$((failures + 1))
fi
echo "slurm checks failed: $failures"
[ "$failures" -eq 0 ]
