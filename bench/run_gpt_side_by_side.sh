#!/bin/bash
# GPT-2-small training throughput side by side, alternating in one run (the host's speed drifts):
# strider (FULL_SHARD and NO_SHARD, which is DDP with mixed precision; float32 and bfloat16) against PyTorch 1.13 DDP over gloo (float32,
# and bfloat16 under CPU autocast) with OpenBLAS as its BLAS (Debian's default reference BLAS is
# 15x slower). 2 ranks, one thread each, sequence 256, batch 4 per rank. One JSON line per run.
#   bench/run_gpt_side_by_side.sh [rounds] > side_by_side.log
set -euo pipefail
rounds=${1:-2}
cd "$(dirname "$0")/.."
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
mpirun=(mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1)
shape=(--n-layer 12 --n-embd 768 --batch 4 --seq 256 --steps 2)
torch_env=(-x LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp -x OPENBLAS_CORETYPE=SkylakeX)
for ((r = 0; r < rounds; ++r)); do
  for dtype in float32 bfloat16; do
    "${mpirun[@]}" build/bench/strider_bench_fsdp --strategy full_shard "${shape[@]}" --dtype "$dtype"
    "${mpirun[@]}" "${torch_env[@]}" /usr/bin/python3 bench/fsdp_pytorch_ddp.py --strategy ddp "${shape[@]}" --dtype "$dtype"
    "${mpirun[@]}" build/bench/strider_bench_fsdp --strategy no_shard "${shape[@]}" --dtype "$dtype"
  done
done
