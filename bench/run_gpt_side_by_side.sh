#!/bin/bash
# GPT-2-small training throughput side by side, alternating in one run (the host's speed drifts):
# strider (FULL_SHARD and NO_SHARD, which is DDP with mixed precision; float32 and bfloat16) against PyTorch 1.13 DDP over gloo (float32,
# and bfloat16 under CPU autocast) with OpenBLAS as its BLAS (Debian's default reference BLAS is
# 15x slower). 2 ranks, one thread each, sequence 256, batch 4 per rank. One JSON line per run.
#   [MAX_ISA=avx2] [DTYPES="float32 bfloat16"] bench/run_gpt_side_by_side.sh [rounds] > side_by_side.log
# MAX_ISA=avx2 runs both on an AVX2-only CPU's code paths (strider's STRIDER_MAX_CPU_ISA; PyTorch's
# ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA and OpenBLAS's Haswell kernels). PyTorch's bfloat16
# cannot be capped (its oneDNN refuses bf16 below AVX-512 while its CPU check still says yes), so
# capped runs are float32 unless DTYPES says otherwise.
set -euo pipefail
rounds=${1:-2}
cd "$(dirname "$0")/.."
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
mpirun=(mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1)
shape=(--n-layer 12 --n-embd 768 --batch 4 --seq 256 --steps 2)
openblas=/usr/lib/x86_64-linux-gnu/openblas-openmp
[[ -d $openblas ]] || { echo "run_gpt_side_by_side.sh: $openblas missing: apt-get install libopenblas0-openmp (else PyTorch runs Debian's reference BLAS)" >&2; exit 2; }
torch_env=(-x LD_LIBRARY_PATH=$openblas)
strider_env=()
if [[ "${MAX_ISA:-}" == avx2 ]]; then
  strider_env=(-x STRIDER_MAX_CPU_ISA=avx2)
  torch_env+=(-x ATEN_CPU_CAPABILITY=avx2 -x ONEDNN_MAX_CPU_ISA=AVX2 -x OPENBLAS_CORETYPE=Haswell)
  dtypes=${DTYPES:-float32}
elif [[ -n "${MAX_ISA:-}" ]]; then
  echo "run_gpt_side_by_side.sh: MAX_ISA must be avx2 or unset, not '$MAX_ISA'" >&2
  exit 2
else
  torch_env+=(-x OPENBLAS_CORETYPE=SkylakeX)
  dtypes=${DTYPES:-float32 bfloat16}
fi
for ((r = 0; r < rounds; ++r)); do
  for dtype in $dtypes; do
    "${mpirun[@]}" "${strider_env[@]}" build/bench/strider_bench_fsdp --strategy full_shard "${shape[@]}" --dtype "$dtype"
    "${mpirun[@]}" "${torch_env[@]}" /usr/bin/python3 bench/fsdp_pytorch_ddp.py --strategy ddp "${shape[@]}" --dtype "$dtype"
    "${mpirun[@]}" "${strider_env[@]}" build/bench/strider_bench_fsdp --strategy no_shard "${shape[@]}" --dtype "$dtype"
  done
done
