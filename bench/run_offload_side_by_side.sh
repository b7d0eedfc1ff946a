#!/bin/bash
# Offload against in-RAM FULL_SHARD (issue 14), alternating in one run: the GPT of the FSDP table
# (24 layers, width 1024, sequence 64, 302.9M parameters) on 2 ranks at batch B per rank. Per
# round it prints the step times (in RAM, offload, offload with the optimizer stepping in backward,
# offload with the previous schedule), the ratios, the disk traffic of an offload step, the
# bandwidth that traffic needs to hide behind the in-RAM step, and the disk bandwidth measured
# right after the offload steps (O_DIRECT, both ranks at once) in the same directory.
#   bench/run_offload_side_by_side.sh [batch] [rounds] [dir]
set -euo pipefail
batch=${1:-8}
rounds=${2:-2}
dir=${3:-/var/tmp}
cd "$(dirname "$0")/.."
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMP_NUM_THREADS=1
run() {
  mpirun --oversubscribe --bind-to none -np 2 -x OMP_NUM_THREADS=1 build/bench/strider_bench_fsdp \
    --strategy full_shard --n-layer 24 --n-embd 1024 --seq 64 --batch "$batch" --steps 3 "$@" | tail -1
}
for r in $(seq "$rounds"); do
  ram=$(run)
  off=$(run --offload "$dir")
  inb=$(run --offload "$dir" --optimizer-in-backward 1)
  # The previous schedule: read on touch in forward, everything read back when backward starts,
  # everything written back when the next forward starts.
  old=$(run --offload "$dir" --offload-read-ahead-mb 0 --offload-stream 0)
  python3 - "$ram" "$off" "$old" "$inb" <<'PY'
import json, sys
ram, off, old, inb = (json.loads(a) for a in sys.argv[1:5])
moved = off["disk_read_bytes_per_step"] + off["disk_write_bytes_per_step"]
print(json.dumps({
    "batch": ram["batch"], "ram_step_s": ram["step_s"], "offload_step_s": off["step_s"],
    "offload_over_ram": round(off["step_s"] / ram["step_s"], 3),
    "in_backward_step_s": inb["step_s"], "in_backward_over_ram": round(inb["step_s"] / ram["step_s"], 3),
    "in_backward_rss_anon_mb": round(inb["rss_anon_bytes"] / 1e6),
    "previous_schedule_step_s": old["step_s"], "previous_over_ram": round(old["step_s"] / ram["step_s"], 3),
    "disk_read_gb_per_step": round(off["disk_read_bytes_per_step"] / 1e9, 3),
    "disk_write_gb_per_step": round(off["disk_write_bytes_per_step"] / 1e9, 3),
    "needed_gbps_to_hide": round(moved / ram["step_s"] / 1e9, 3),
    "measured_write_gbps": off["disk_write_gbps_measured"], "measured_read_gbps": off["disk_read_gbps_measured"],
    "offload_rss_anon_mb": round(off["rss_anon_bytes"] / 1e6), "ram_rss_anon_mb": round(ram["rss_anon_bytes"] / 1e6),
}))
PY
done
