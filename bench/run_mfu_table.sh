#!/bin/bash
# The MFU table of docs/benchmarks.md (issue 14): GPT-2-small shape (12 layers, width 768, byte
# vocabulary, sequence 256) on 2 ranks with one thread each, every strategy x float32/bfloat16 x
# with and without activation checkpointing, at batch B per rank. One JSON line per run.
#   bench/run_mfu_table.sh [batch] > mfu.log
set -euo pipefail
batch=${1:-4}
cd "$(dirname "$0")/.."
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
for strategy in full_shard shard_grad_op shard_optimizer ddp; do
  for dtype in float32 bfloat16; do
    # DDP here is the float32 DistributedDataParallel front: mixed precision is FSDP's option.
    if [ "$strategy" = ddp ] && [ "$dtype" = bfloat16 ]; then continue; fi
    for ac in 0 1; do
      mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 build/bench/strider_bench_fsdp \
        --strategy "$strategy" --n-layer 12 --n-embd 768 --batch "$batch" --seq 256 --steps 5 \
        --dtype "$dtype" --activation-checkpointing "$ac"
    done
  done
done
