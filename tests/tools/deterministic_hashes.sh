#!/bin/bash
# Deterministic mode through `strider train`: 20 steps of the GPT give the same params_sha256 and
# optimizer_sha256 alone (W=1), under FULL_SHARD on 2, 3 and 4 ranks, SHARD_GRAD_OP on 2,
# SHARD_OPTIMIZER on 3, HYBRID_SHARD as 2 x 2, DDP on 4, and with activation checkpointing under
# FULL_SHARD on 3 and DDP on 2, and with the optimizer stepping in backward (FULL_SHARD on 2,
# offloaded on 3, HYBRID_SHARD as 2 x 2); bfloat16 DDP alike on 1, 2 and 3; AdamW with bfloat16
# moments alike on 1, 3 and 2 x 2. A normal-mode run must differ from them (the comparison can fail).
# Usage: deterministic_hashes.sh STRIDER_BINARY OUT_DIR MPIRUN [MPIRUN ARGS...]
set -euo pipefail
bin=$1 out=$2
shift 2
mpirun=("$@")
rm -rf "$out"; mkdir -p "$out"  # each run writes fresh run directories: the trainer refuses another run's
args=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-embd 64 --seq 32
      --batch-size 12 --optimizer adamw --lr 1e-3 --fsdp-min-params 10000
      --epochs 1 --limit-batches 20 --json)

digest() {  # NAME RANKS FLAGS...: prints "params optimizer" of one run
  local name=$1 np=$2
  shift 2
  local line
  if [ "$np" = 1 ]; then
    line=$("$bin" "${args[@]}" "$@" --out "$out/$name" | tail -n 1)
  else
    line=$("${mpirun[@]}" -np "$np" "$bin" "${args[@]}" "$@" --out "$out/$name" | tail -n 1)
  fi
  local p o
  p=$(sed -n 's/.*"params_sha256":"\([0-9a-f]*\)".*/\1/p' <<<"$line")
  o=$(sed -n 's/.*"optimizer_sha256":"\([0-9a-f]*\)".*/\1/p' <<<"$line")
  if [ ${#p} != 64 ] || [ ${#o} != 64 ]; then
    echo "$name: no digests in: $line" >&2
    exit 1
  fi
  echo "$p $o"
}

want=$(digest alone 1 --deterministic --micro-batches 12 --fsdp full_shard)
echo "W=1 full_shard: $want"
status=0
for run in "full_shard 2" "full_shard 3" "full_shard 4" "shard_grad_op 2" "shard_optimizer 3" \
           "hybrid_shard 4 --shard-group-size 2" "ddp 4" "full_shard 3 --activation-checkpointing" \
           "ddp 2 --activation-checkpointing" "full_shard 2 --optimizer-in-backward" \
           "full_shard 3 --optimizer-in-backward --fsdp-offload" \
           "hybrid_shard 4 --shard-group-size 2 --optimizer-in-backward"; do
  read -r strategy np extra <<<"$run"
  # shellcheck disable=SC2086  # extra holds flags
  runs=$((${runs:-0} + 1))  # a directory per run: some strategy and rank count pairs run twice
  got=$(digest "$runs-$strategy-np$np" "$np" --deterministic --micro-batches 12 --fsdp "$strategy" $extra)
  echo "W=$np $strategy $extra: $got"
  [ "$got" = "$want" ] || { echo "  differs from W=1" >&2; status=1; }
done
# bfloat16 compute (a cast of the parameters per micro-batch) under DDP, alone and on 2 and 3 ranks.
want_bf16=$(digest alone-bf16 1 --deterministic --micro-batches 12 --fsdp ddp --dtype bfloat16)
echo "W=1 ddp bfloat16: $want_bf16"
for np in 2 3; do
  got=$(digest "ddp-bf16-np$np" "$np" --deterministic --micro-batches 12 --fsdp ddp --dtype bfloat16)
  echo "W=$np ddp bfloat16: $got"
  [ "$got" = "$want_bf16" ] || { echo "  differs from W=1" >&2; status=1; }
done
# AdamW's moments in bfloat16 (stochastic rounding keyed by each element's place in its whole
# parameter): the same bits alone, on 3 ranks, and as 2 x 2 hybrid stepping in backward; not
# those of float32 moments.
want_state=$(digest alone-bf16-state 1 --deterministic --micro-batches 12 --fsdp full_shard --optimizer-state-dtype bfloat16)
echo "W=1 full_shard, bfloat16 moments: $want_state"
[ "$want_state" != "$want" ] || { echo "  bfloat16 moments gave float32 moments' bits" >&2; status=1; }
for run in "full_shard 3" "hybrid_shard 4 --shard-group-size 2 --optimizer-in-backward"; do
  read -r strategy np extra <<<"$run"
  # shellcheck disable=SC2086  # extra holds flags
  got=$(digest "bf16-state-$strategy-np$np" "$np" --deterministic --micro-batches 12 --fsdp "$strategy" \
        --optimizer-state-dtype bfloat16 $extra)
  echo "W=$np $strategy $extra, bfloat16 moments: $got"
  [ "$got" = "$want_state" ] || { echo "  differs from W=1" >&2; status=1; }
done
normal=$(digest normal-np2 2 --fsdp full_shard --threads 1)
echo "W=2 full_shard, normal mode: $normal"
[ "$normal" != "$want" ] || { echo "a normal-mode run matched bitwise: the digests cannot tell runs apart" >&2; status=1; }
exit $status
