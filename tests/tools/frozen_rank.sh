#!/usr/bin/env bash
# SIGSTOP of one rank of a FULL_SHARD trainer run, mid-step or just as a checkpoint save begins,
# at 2 and 4 ranks: the job must end naming that rank as stopped (not disagreeing) within the
# heartbeat timeout plus the abort, although the collective timeout is 10 minutes.
# Usage: frozen_rank.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
heartbeat=4 bound=25  # seconds: the heartbeat timeout, and the most the job may take to end after the stop
rm -rf "$work"; mkdir -p "$work"
failures=0
for trial in "2 step" "4 step" "2 save" "4 save"; do
  read -r np when <<< "$trial"
  run="$work/run-$np-$when"
  "$mpirun" --oversubscribe --bind-to none -np "$np" "$strider" train --model gpt \
    --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-head 4 --n-embd 128 --seq 32 --batch-size 8 \
    --limit-batches 1 --epochs 100000 --threads 1 --checkpoint-every 2 --fsdp full_shard --fsdp-min-params 10000 \
    --collective-timeout 600 --heartbeat-timeout "$heartbeat" --no-progress --out "$run" > "$run.log" 2>&1 &
  job=$!
  # Past start-up: wait for the first committed checkpoint.
  for _ in $(seq 1 1200); do compgen -G "$run/checkpoint-*" > /dev/null && break; sleep 0.05; done
  ranks=$(pgrep -f -- "--out $run" | grep -vx "$job" | while read -r p; do
            [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$(basename "$strider" | cut -c1-15)" ] && echo "$p"; done)
  victim=$(shuf -n1 -e $ranks)
  rank=$(tr '\0' '\n' < /proc/"$victim"/environ | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  if [ "$when" = save ]; then  # spin on bash builtins until the next save starts, then stop at once
    for _ in $(seq 1 400000); do compgen -G "$run/.pending-*" > /dev/null && break; done
  else
    sleep 0.3
  fi
  kill -STOP "$victim"; stopped=$SECONDS
  ended=no
  for _ in $(seq 1 $((bound * 10))); do kill -0 "$job" 2>/dev/null || { ended=yes; break; }; sleep 0.1; done
  took=$((SECONDS - stopped))
  if [ $ended = no ]; then
    kill -CONT "$victim" 2>/dev/null; kill -9 "$job" $ranks 2>/dev/null
  fi
  wait "$job" 2>/dev/null
  if [ $ended = yes ] && grep -q "rank $rank of $np (host '[^']*') stopped answering" "$run.log"; then
    echo "$np ranks, rank $rank stopped mid-$when: named, job ended ${took}s after the stop"
  else
    echo "$np ranks, rank $rank stopped mid-$when: NOT named within ${bound}s (ended: $ended); log:"
    tail -n 20 "$run.log"
    failures=$((failures + 1))
  fi
done
echo "frozen-rank trials failed: $failures"
[ "$failures" -eq 0 ]
