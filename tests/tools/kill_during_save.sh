#!/usr/bin/env bash
# kill -9 of the trainer at random moments, many of them inside a checkpoint save: the checkpoint
# left behind always verifies (the rename is atomic), and the next completed save removes the
# temporaries the killed writers left. Usage: kill_during_save.sh STRIDER WORK_DIR [TRIALS]
set -uo pipefail
strider=$1 work=$2 trials=${3:-12}
rm -rf "$work"; mkdir -p "$work"
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-head 4 --n-embd 256 --seq 32
      --batch-size 8 --limit-batches 1 --epochs 1000 --threads 1 --json --out "$work/run")
bad=0
for i in $(seq 1 "$trials"); do
  "$strider" "${args[@]}" > /dev/null 2>&1 &
  pid=$!
  sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 2.5 }')"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [ -f "$work/run/checkpoint.safetensors" ] && ! "$strider" ckpt verify "$work/run/checkpoint.safetensors" > /dev/null; then
    bad=$((bad + 1)); echo "trial $i: the checkpoint left by kill -9 does not verify"
  fi
done
left=$(ls "$work/run" | grep -c '\.tmp\.' || true)
echo "after $trials kills: $left temporaries left by killed saves"
# One save that completes: it removes them.
"$strider" train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-head 4 --n-embd 256 --seq 32 \
  --batch-size 8 --limit-batches 1 --epochs 1 --threads 1 --json --out "$work/run" > /dev/null 2>&1 \
  || { echo "the completing run failed"; bad=$((bad + 1)); }
remaining=$(ls "$work/run" | grep -c '\.tmp\.' || true)
"$strider" ckpt verify "$work/run/checkpoint.safetensors" > /dev/null || bad=$((bad + 1))
echo "kill -9 trials: $trials, unloadable checkpoints: $bad, temporaries after the next save: $remaining"
[ "$bad" -eq 0 ] && [ "$remaining" -eq 0 ]
