#!/usr/bin/env bash
# Resuming at another world size and strategy, through `strider train`: a deterministic GPT run
# on 4 ranks under FULL_SHARD, checkpointed mid-epoch at step 10, resumed at 2 ranks
# (SHARD_GRAD_OP), 3 ranks (FULL_SHARD) and alone (DDP), ends with the same parameter and
# optimizer digests as the uninterrupted run; so does a run split into legs by --max-steps
# (2 ranks, then 3); so do resumes from the checkpoint resharded offline (`strider ckpt
# reshard`) to 2 and 3 ranks. The consolidated checkpoint holds exactly the shards' bytes
# under the model's names (and is the file --export-model wrote at the end) (checked by an independent reader, and loaded into PyTorch when it is
# installed). A checkpoint holding a rank file from another save is refused, naming it. Built
# with --deferred-init (only shards ever allocated), runs at 1, 2 and 3 ranks end identically;
# checkpoints written in the background (--async-checkpoint) resume identically too.
# Usage: resume_reshard.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-embd 64 --seq 32
      --batch-size 12 --optimizer adamw --lr 1e-3 --fsdp-min-params 10000 --epochs 2 --limit-batches 15
      --json --deterministic --micro-batches 12)
run() {  # NP ARGS...: the last line's digests, or the error
  local np=$1; shift
  local out
  if [ "$np" = 1 ]; then out=$(timeout 300 "$strider" "${args[@]}" "$@" 2>&1)
  else out=$(timeout 300 "$mpirun" --oversubscribe --bind-to none -np "$np" "$strider" "${args[@]}" "$@" 2>&1); fi
  grep -o '"optimizer_sha256":"[0-9a-f]*"\|"params_sha256":"[0-9a-f]*"' <<<"$out" | tr '\n' ' '
  grep -m1 -o 'strider: .*' <<<"$out"
}
status=0
want=$(run 4 --fsdp full_shard --checkpoint-every 10 --out "$work/full" --export-model "$work/exported.safetensors")
echo "uninterrupted, 4 ranks: $want"
[ -n "$want" ] && [ "${want#strider:}" = "$want" ] || { echo "the uninterrupted run failed"; exit 1; }
check() {  # NAME GOT
  echo "$1: $2"
  [ "$2" = "$want" ] || { echo "  differs from the uninterrupted run"; status=1; }
}
from="$work/full/checkpoint-000000010"
check "resumed at step 10 on 2 ranks, shard_grad_op" "$(run 2 --fsdp shard_grad_op --resume "$from" --out "$work/r2")"
check "resumed at step 10 on 3 ranks, full_shard" "$(run 3 --fsdp full_shard --resume "$from" --out "$work/r3")"
check "resumed at step 10 alone, ddp" "$(run 1 --fsdp ddp --resume "$from" --out "$work/r1")"
"$strider" ckpt reshard "$from" "$work/offline2" --world-size 2 --strategy shard_grad_op || status=1
"$strider" ckpt reshard "$from" "$work/offline3" --world-size 3 --strategy full_shard || status=1
"$strider" ckpt verify "$work/offline2" "$work/offline3" || status=1
check "resharded offline to 2 ranks, resumed there" "$(run 2 --fsdp shard_grad_op --resume "$work/offline2" --out "$work/o2")"
check "resharded offline to 3 ranks, resumed there" "$(run 3 --fsdp full_shard --resume "$work/offline3" --out "$work/o3")"
"$strider" ckpt consolidate "$work/full" "$work/model.safetensors" || status=1
"$strider" ckpt verify "$work/model.safetensors" || status=1
# The trainer's --export-model (a full save streamed to rank 0) is the same file, byte for byte.
cmp "$work/exported.safetensors" "$work/model.safetensors" && echo "--export-model: the consolidated file's bytes" \
  || { echo "--export-model differs from the consolidated final checkpoint"; status=1; }
python=$(command -v /usr/bin/python3 python3 | head -n1)
if [ -n "$python" ]; then
  "$python" "$(dirname "$0")/check_consolidated.py" "$work/model.safetensors" "$work/full/checkpoint-000000030" || status=1
else
  echo "consolidated file: no python3 here for the independent reader"
fi
check "saved with --async-checkpoint, 2 ranks" "$(run 2 --fsdp full_shard --async-checkpoint --checkpoint-every 10 --out "$work/async")"
check "resumed from its step-10 checkpoint on 3 ranks" \
      "$(run 3 --fsdp full_shard --resume "$work/async/checkpoint-000000010" --out "$work/ra")"
run 2 --fsdp full_shard --max-steps 10 --out "$work/legs" > /dev/null
check "legs: 10 steps on 2 ranks, the rest on 3 (--resume of the run directory)" \
      "$(run 3 --fsdp full_shard --resume "$work/legs" --out "$work/legs")"
# A rank file swapped in from another save of the same run.
mkdir -p "$work/mixed"; cp -r "$from" "$work/mixed/"
cp "$work/full/checkpoint-000000020/rank-00001-of-00004.safetensors" "$work/mixed/checkpoint-000000010/"
mixed=$(run 4 --fsdp full_shard --resume "$work/mixed" --out "$work/rm" | sed 's/.*failed on //')
echo "mixed saves: $mixed"
grep -q "rank-00001-of-00004.safetensors: bytes .* fail their checksum" <<<"$mixed" || { echo "  not named"; status=1; }
deferred=$(run 2 --fsdp full_shard --deferred-init --out "$work/d2")
echo "deferred init, 2 ranks: $deferred"
for np in 1 3; do
  got=$(run $np --fsdp full_shard --deferred-init --out "$work/d$np")
  echo "deferred init, $np ranks: $got"
  [ -n "$deferred" ] && [ "$got" = "$deferred" ] || { echo "  differs from 2 ranks"; status=1; }
done
[ "$deferred" != "$want" ] || { echo "  deferred init drew the eager values: not deferred"; status=1; }
exit $status
