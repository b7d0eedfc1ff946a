#!/bin/bash
# The strategy sweep of docs/benchmarks.md: every ShardingStrategy (and DDP) training the same GPT
# at 2 and 4 ranks, two rounds interleaved; one JSON line each with the step time, the per-rank
# peak against fsdp::memory_formula and the bytes sent against fsdp::bytes_sent_per_step. Run from
# the repository root after a Release build:
#   bench/run_strategy_sweep.sh > strategies.log; python3 bench/fsdp_table.py < strategies.log
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_NUM_THREADS=1
A="--n-layer ${N_LAYER:-12} --n-embd ${N_EMBD:-512} --seq 64 --batch 2 --steps 3 --prefetch 1"
B=build/bench/strider_bench_fsdp
for round in 1 2; do
  for np in 2 4; do
    M="mpirun -np $np --oversubscribe --bind-to none"
    for s in ddp no_shard shard_optimizer shard_grad_op full_shard; do $M $B --strategy $s $A; done
    for s in hybrid_shard hybrid_shard_grad_op; do $M $B --strategy $s $A --shard-group-size $((np / 2)); done
  done
done
