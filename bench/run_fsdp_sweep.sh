#!/bin/bash
# The GPT sweep of docs/benchmarks.md: strider local / DDP / FSDP (each strategy, prefetch on and
# off, offload) and PyTorch 1.13 local / DDP (gloo), interleaved over 3 rounds, one JSON line
# each. Run from the repository root after a Release build:
#   bench/run_fsdp_sweep.sh > sweep.log; python3 bench/fsdp_table.py < sweep.log
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
A="--n-layer ${N_LAYER:-24} --n-embd ${N_EMBD:-1024} --seq 64 --steps 3"
B=build/bench/strider_bench_fsdp
M="mpirun -np 2 --bind-to none"
for round in 1 2 3; do
  $B --strategy local $A --batch 2
  $M $B --strategy ddp $A --batch 2
  $M $B --strategy no_shard $A --batch 2
  $M $B --strategy shard_grad_op $A --batch 2
  $M $B --strategy full_shard $A --batch 2 --prefetch 1
  $M $B --strategy full_shard $A --batch 2 --prefetch 0
  /usr/bin/python3 bench/fsdp_pytorch_ddp.py --strategy local $A --batch 2
  $M /usr/bin/python3 bench/fsdp_pytorch_ddp.py --strategy ddp $A --batch 2
done
for round in 1 2; do
  $M $B --strategy full_shard $A --batch 2 --offload /var/tmp
  $M $B --strategy full_shard $A --batch 8
  $M $B --strategy full_shard $A --batch 8 --offload /var/tmp
done
