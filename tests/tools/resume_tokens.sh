#!/usr/bin/env bash
# Resuming a GPT trained on a token file (--tokens, nanoGPT's uint16) at another world size: a
# deterministic run on 4 ranks checkpointed mid-epoch at step 10, resumed at 2 ranks and alone,
# ends with the uninterrupted run's parameter and optimizer digests: the data position (global
# samples) continues with exactly the windows the uninterrupted run trained on.
# Usage: resume_tokens.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
LC_ALL=C tr '\n' ' ' < /usr/share/common-licenses/GPL-3 | LC_ALL=C sed 's/./&\x00/g' > "$work/train.bin"
args=(train --model gpt --tokens "$work/train.bin" --n-layer 2 --n-embd 64 --seq 32 --batch-size 12 --optimizer adamw
      --lr 1e-3 --fsdp-min-params 10000 --epochs 2 --limit-batches 15 --json --deterministic --micro-batches 12)
run() {  # NP ARGS...: the digests, or the error
  local np=$1; shift
  local out
  if [ "$np" = 1 ]; then out=$(timeout 300 "$strider" "${args[@]}" "$@" 2>&1)
  else out=$(timeout 300 "$mpirun" --oversubscribe --bind-to none -np "$np" "$strider" "${args[@]}" "$@" 2>&1); fi
  grep -o '"optimizer_sha256":"[0-9a-f]*"\|"params_sha256":"[0-9a-f]*"' <<<"$out" | tr '\n' ' '
  grep -m1 -o 'strider: .*' <<<"$out"
}
status=0
want=$(run 4 --fsdp full_shard --checkpoint-every 10 --out "$work/full")
echo "uninterrupted, 4 ranks: $want"
[ -n "$want" ] && [ "${want#strider:}" = "$want" ] || { echo "the uninterrupted run failed"; exit 1; }
check() {  # NAME GOT
  echo "$1: $2"
  [ "$2" = "$want" ] || { echo "  differs from the uninterrupted run"; status=1; }
}
from="$work/full/checkpoint-000000010"
check "resumed at step 10 on 2 ranks, shard_grad_op" "$(run 2 --fsdp shard_grad_op --resume "$from" --out "$work/r2")"
check "resumed at step 10 alone, ddp" "$(run 1 --fsdp ddp --resume "$from" --out "$work/r1")"
[ $status -eq 0 ] && echo "token file resumes: all equal"
exit $status
