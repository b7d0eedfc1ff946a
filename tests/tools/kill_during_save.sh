#!/usr/bin/env bash
# kill -9 of the trainer at random moments while it saves a checkpoint after every step: the
# latest committed checkpoint always verifies and resumes, and the next successful save leaves
# no pending directory or temporary file behind. Usage: kill_during_save.sh STRIDER WORK_DIR [TRIALS]
set -uo pipefail
strider=$1 work=$2 trials=${3:-20}
rm -rf "$work"; mkdir -p "$work"
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-head 4 --n-embd 256 --seq 32
      --batch-size 8 --limit-batches 1 --epochs 100000 --threads 1 --json --checkpoint-every 1 --keep-checkpoints 2)
bad=0 committed=0
for i in $(seq 1 "$trials"); do
  resume=()
  [ -n "$(ls -d "$work/run"/checkpoint-* 2>/dev/null)" ] && resume=(--resume "$work/run")
  "$strider" "${args[@]}" "${resume[@]}" --out "$work/run" > /dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.3 + rand() * 1.7 }')"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [ -n "$(ls -d "$work/run"/checkpoint-* 2>/dev/null)" ]; then
    committed=$((committed + 1))
    if ! "$strider" ckpt verify "$work/run" > /dev/null; then
      bad=$((bad + 1)); echo "trial $i: the latest checkpoint left by kill -9 does not verify"
    fi
  fi
done
left=$(find "$work/run" -name '.pending-*' -o -name '*.tmp.*' | wc -l)
echo "after $trials kills: $committed left a committed checkpoint, $left pending saves or temporaries"
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
