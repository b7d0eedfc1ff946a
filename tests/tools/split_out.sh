#!/usr/bin/env bash
# Ranks whose --out is not one shared directory (here: the same relative --out from two working
# directories, as on node-local disks) are refused at the start, naming the rank that does not
# see rank 0's directory and the fix; no checkpoint is written anywhere.
# Usage: split_out.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work/nodeA" "$work/nodeB"
train=(train --model small_cnn --fsdp full_shard --epochs 1 --batch-size 32 --threads 1 --no-progress
       --limit-batches 4 --checkpoint-every 2 --out run)
timeout 120 "$mpirun" --oversubscribe -np 1 -wdir "$work/nodeA" "$strider" "${train[@]}" : \
  -np 1 -wdir "$work/nodeB" "$strider" "${train[@]}" > "$work/out" 2> "$work/err"
code=$?
grep "strider:" "$work/err" | head -n 2
checkpoints=$(find "$work" -name 'checkpoint-*' | wc -l)
echo "exit $code; checkpoints written: $checkpoints"
if [ $code -eq 0 ] || [ "$checkpoints" -ne 0 ] || ! grep -q "not one directory shared by every rank: rank 1 ($work/nodeB/run)" "$work/err"; then
  echo "FAILED"; tail -n 20 "$work/err"; exit 1
fi
