#!/usr/bin/env bash
# kill -9 of the trainer at random moments while it saves a checkpoint after every step: the
# latest committed checkpoint always verifies and resumes, and the next successful save leaves
# no pending directory or temporary file behind. Half of the trials save with --async-checkpoint. With MPIRUN, each trial runs under mpirun on 2
# or 3 ranks (FULL_SHARD, resuming whatever the previous trial left at another world size) and
# kills one rank or every rank.
# Usage: kill_during_save.sh STRIDER WORK_DIR [TRIALS [MPIRUN]]
set -uo pipefail
strider=$1 work=$2 trials=${3:-20} mpirun=${4:-}
rm -rf "$work"; mkdir -p "$work"
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-head 4 --n-embd 256 --seq 32
      --batch-size 6 --limit-batches 1 --epochs 100000 --threads 1 --json --checkpoint-every 1 --keep-checkpoints 2)
bad=0 committed=0 mid_save=0
latest() { ls -d "$work/run"/checkpoint-* 2>/dev/null | tail -n 1; }
for i in $(seq 1 "$trials"); do
  resume=()
  [ -n "$(ls -d "$work/run"/checkpoint-* 2>/dev/null)" ] && resume=(--resume "$work/run")
  delay=$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.3 + rand() * 1.7 }')
  mode=(); [ $((RANDOM % 2)) -eq 0 ] && mode=(--async-checkpoint)  # half the trials save in the background
  if [ -z "$mpirun" ]; then
    "$strider" "${args[@]}" "${mode[@]}" "${resume[@]}" --out "$work/run" > /dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  else
    np=$((2 + i % 2))
    timeout 120 "$mpirun" --oversubscribe --bind-to none -np $np "$strider" "${args[@]}" "${mode[@]}" "${resume[@]}" \
      --fsdp full_shard --fsdp-min-params 10000 --collective-timeout 30 --out "$work/run" > /dev/null 2>&1 &
    pid=$!
    # Past start-up and resume: wait for this run's first save, then kill within the next steps.
    before=$(latest) started=$SECONDS
    for _ in $(seq 1 600); do [ "$(latest)" != "$before" ] || ! kill -0 "$pid" 2>/dev/null && break; sleep 0.05; done
    waited=$((SECONDS - started))
    # Choose the victims first, so that nothing slow stands between seeing a save and the kill.
    ranks=$(pgrep -f -- "--out $work/run" | grep -vx "$pid" | while read -r p; do
              [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$(basename "$strider" | cut -c1-15)" ] && echo "$p"; done)
    if [ $((RANDOM % 3)) -eq 0 ]; then victims=$ranks; what="every rank"
    else victims=$(shuf -n1 -e $ranks 2>/dev/null); what="one rank"; fi
    if [ $((i % 4)) -lt 2 ]; then
      # Aim inside a save: spin on bash builtins until the next one starts, then kill at once.
      when="as a save began"
      for _ in $(seq 1 200000); do compgen -G "$work/run/.pending-*" > /dev/null && break; done
    else
      delay=$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", rand() * 0.4 }')
      when="${delay}s after a save"
      sleep "$delay"
    fi
    [ -n "$victims" ] && kill -9 $victims 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "trial $i: $np ranks${mode:+ (async)}, first save after ${waited}s, killed $what $when"
  fi
  if [ -n "$(find "$work/run" -name '.pending-*' -o -name '*.tmp.*' 2>/dev/null)" ]; then
    mid_save=$((mid_save + 1))  # this kill cut a save short
  fi
  if [ -n "$(ls -d "$work/run"/checkpoint-* 2>/dev/null)" ]; then
    committed=$((committed + 1))
    if ! "$strider" ckpt verify "$work/run" > /dev/null; then
      bad=$((bad + 1)); echo "trial $i: the latest checkpoint left by kill -9 does not verify"
    fi
  fi
done
left=$(find "$work/run" -name '.pending-*' -o -name '*.tmp.*' | wc -l)
echo "after $trials kills: $committed left a committed checkpoint, $mid_save cut a save short; $left pending saves or temporaries now"
# The latest committed checkpoint resumes, and its next save removes what the killed ones left.
step=$("$strider" ckpt verify "$work/run" | sed -n 's/.*: ok, step \([0-9]*\),.*/\1/p')
if [ -z "$step" ] || ! "$strider" "${args[@]}" --resume "$work/run" --max-steps $((step + 1)) --out "$work/run" \
     > /dev/null 2>&1; then
  echo "resuming the latest checkpoint (step ${step:-?}) failed"; bad=$((bad + 1))
fi
remaining=$(find "$work/run" -name '.pending-*' -o -name '*.tmp.*' | wc -l)
"$strider" ckpt verify "$work/run" || bad=$((bad + 1))
echo "kill -9 trials: $trials, unloadable checkpoints: $bad, temporaries after the next save: $remaining"
[ "$bad" -eq 0 ] && [ "$remaining" -eq 0 ] && [ "$committed" -gt 0 ]
