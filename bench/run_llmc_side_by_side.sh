#!/bin/bash
# llm.c's CPU trainer against strider on the same GPT (12 layers, width 768, byte vocabulary,
# 256 tokens per sequence, 8 sequences per step), alternating in one run. llm.c is one process
# with 2 OpenMP threads; strider is FULL_SHARD on 2 ranks with one thread each. llm.c comes from a
# checkout of github.com/karpathy/llm.c (not part of strider): train_gpt2.c is built here as its
# Makefile builds it (-Ofast -march=native -fopenmp), with B = 8 and T = 256 instead of its
# hard-coded 4 x 64, and no sampling; its inputs come from bench/write_llmc_inputs.py.
#   bench/run_llmc_side_by_side.sh LLMC_CHECKOUT [rounds]
set -euo pipefail
src=$1 rounds=${2:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src/train_gpt2.c" "$work/"
cp -r "$src/llmc" "$work/"
sed -i 's/int B = 4;/int B = 8;/; s/int T = 64;/int T = 256;/; s/step <= 40;/step <= 6;/; s/step % 20 == 0/step % 1000 == 999/' \
  "$work/train_gpt2.c"
grep -q "int T = 256;" "$work/train_gpt2.c" || { echo "could not patch train_gpt2.c's batch shape" >&2; exit 1; }
gcc -Ofast -march=native -fopenmp -DOMP -Wno-unused-result -I"$work" "$work/train_gpt2.c" -lm -o "$work/train_gpt2"
/usr/bin/python3 "$here/bench/write_llmc_inputs.py" "$work"
export OMPI_MCA_btl_vader_single_copy_mechanism=none
for ((r = 0; r < rounds; ++r)); do
  # llm.c: the median of its timed training steps after the first.
  (cd "$work" && OMP_NUM_THREADS=2 ./train_gpt2) | sed -n 's/^step \([0-9]*\): train loss .* (took \(.*\) ms)/\1 \2/p' |
    awk '$1 > 0 { print $2 }' | sort -g | awk '{ t[n++] = $1 } END {
      m = t[int((n - 1) / 2)] / 1000
      printf "{\"framework\":\"llm.c\",\"step_s\":%.3f,\"tokens_per_s\":%.1f,\"steps\":%d}\n", m, 8 * 256 / m, n }'
  OMP_NUM_THREADS=1 mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 "$here/build/bench/strider_bench_fsdp" \
    --strategy full_shard --n-layer 12 --n-embd 768 --batch 4 --seq 256 --steps 3
done
