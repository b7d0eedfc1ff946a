#!/usr/bin/env bash
# Ranks reading different data of the same size (here: the same relative --text-file from two
# working directories, one byte apart) are refused at the start, naming the rank and the data's
# digests, instead of training one model on two data sets.
# Usage: data_differs.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work/a" "$work/b"
cp /usr/share/common-licenses/GPL-3 "$work/a/data.txt"
sed '1s/^./X/' /usr/share/common-licenses/GPL-3 > "$work/b/data.txt"
train=(train --model gpt --text-file data.txt --n-layer 1 --n-embd 32 --seq 16 --batch-size 8 --fsdp ddp --epochs 1
       --limit-batches 2 --threads 1 --no-progress --out "$work/run")
timeout 120 "$mpirun" --oversubscribe -np 1 -wdir "$work/a" "$strider" "${train[@]}" : \
  -np 1 -wdir "$work/b" "$strider" "${train[@]}" > "$work/out" 2> "$work/err"
code=$?
grep "strider:" "$work/err" | head -n 1
echo "exit $code"
if [ $code -eq 0 ] || ! grep -q "model, --seed and data (size and content digest). differs across ranks: rank 1 has 'training_data" "$work/err"; then
  echo "FAILED"; tail -n 20 "$work/err"; exit 1
fi
