#!/usr/bin/env bash
# Two 2-rank runs saved after epoch 1 and after epoch 2; a set mixing their rank files (what a
# job killed mid-save leaves), and a set missing a rank's file, must each stop the resume with a
# message naming the cause. Usage: mixed_resume_set.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 1 --n-head 2 --n-embd 16 --seq 16
      --batch-size 8 --limit-batches 2 --threads 1 --json --fsdp full_shard --fsdp-min-params 100)
run() { timeout 120 "$mpirun" --oversubscribe --bind-to none -np 2 "$strider" "${args[@]}" "$@" 2>&1; }
run --epochs 1 --out "$work/e1" > /dev/null || { echo "setup failed"; exit 1; }
run --epochs 2 --out "$work/e2" > /dev/null || { echo "setup failed"; exit 1; }
mkdir -p "$work/mixed" "$work/missing"
cp "$work/e2/checkpoint-rank0.safetensors" "$work/mixed/"
cp "$work/e1/checkpoint-rank1.safetensors" "$work/mixed/"
cp "$work/e2/checkpoint-rank0.safetensors" "$work/missing/"
echo -n "mixed epochs: "
run --epochs 3 --out "$work/r1" --resume "$work/mixed" | grep -m1 "differs across ranks" | sed 's/.*\[the resumed/the resumed/'
echo -n "missing rank file: "
run --epochs 3 --out "$work/r2" --resume "$work/missing" | grep -m1 "cannot open" | sed 's/.*cannot open //'
