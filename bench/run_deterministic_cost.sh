#!/bin/bash
# Deterministic mode's cost (docs/benchmarks.md): the GPT-2-small-shaped model (12 layers, width
# 768) on 2 ranks, each strategy in normal and deterministic mode (one micro-batch per rank, the
# same per-rank batch), alternated over two rounds; one JSON line per run. Run from the
# repository root after a Release build:
#   bench/run_deterministic_cost.sh > deterministic.log; python3 bench/deterministic_table.py < deterministic.log
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1
B=build/bench/strider_bench_fsdp
M="mpirun -np 2 --oversubscribe --bind-to none"
for round in 1 2; do
  for shape in "--seq 128 --batch 2" "--seq 256 --batch 4"; do
    for s in ddp shard_optimizer shard_grad_op full_shard; do
      [ "$shape" = "--seq 256 --batch 4" ] && [ "$s" != full_shard ] && continue
      for d in 0 1; do $M $B --strategy $s --n-layer 12 --n-embd 768 $shape --steps 3 --deterministic $d; done
    done
  done
done
