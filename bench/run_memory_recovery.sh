#!/bin/bash
# What in-memory snapshots cost and what they save, on 2 emulated hosts x 2 ranks
# (scripts/emulated-hosts.sh, as root), deterministic FULL_SHARD GPT training:
#   1. the step time without snapshots and with --memory-snapshot-every N (the stall per step,
#      the host memory per rank), alternated ROUNDS times;
#   2. `strider launch` with snapshots, a whole host killed with its memory (emulated-hosts.sh
#      kill h1) once the snapshot of step KILL_AFTER exists: the time from the kill to the
#      relaunched job's "resuming" line, split into the launcher's part, the ranks' start-up and
#      finding + loading the snapshot, and the steps redone; the final digests against run 1's.
# Every stderr line is time-stamped as it arrives. One summary JSON line at the end.
#   with OVERLAP=1, part 1 alternates a third run, --memory-snapshot-overlap (the partner copy
#   travels while the next step trains), and part 2 uses it.
#   [N=5] [RATE=10gbit] [ROUNDS=2] [KILL_AFTER=20] [OVERLAP=0] bench/run_memory_recovery.sh
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-5} rate=${RATE:-10gbit} rounds=${ROUNDS:-2} kill_after=${KILL_AFTER:-20} overlap=${OVERLAP:-0}
fault_flags=(); [ "$overlap" = 1 ] && fault_flags=(--memory-snapshot-overlap)
strider=$PWD/build/tools/strider
hosts=$PWD/scripts/emulated-hosts.sh
work=$(mktemp -d /tmp/strider-memory-recovery.XXXXXX)
trap '"$hosts" down; rm -rf "$work"' EXIT
"$hosts" down
if [ "$rate" = none ]; then "$hosts" up 2 >&2; else "$hosts" up 2 "$rate" >&2; fi
printf 'h0 slots=2\nh1 slots=2\n' > "$work/hostfile"
train=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 6 --n-embd 384 --n-head 6 --seq 128
       --batch-size 8 --optimizer adamw --lr 1e-3 --fsdp full_shard --fsdp-min-params 10000 --epochs 1
       --limit-batches 40 --deterministic --micro-batches 8 --checkpoint-every 1000 --json --no-progress
       --heartbeat-timeout 5)
run4() { "$hosts" mpirun --host h0:2,h1:2 -np 4 -x OMP_NUM_THREADS=1 "$strider" "${train[@]}" "$@" 2> /dev/null | tail -n 1; }
field() { python3 -c "import json,sys; d=json.loads(sys.stdin.read()); print(json.dumps(eval('d' + sys.argv[1])))" "$1"; }
# Seconds per step of a run: its epoch's time over its steps (start-up and evaluation excluded).
step_seconds() { python3 -c "import json; m=[json.loads(l) for l in open('$1/metrics.jsonl')][-1]; print(m['epoch_seconds'] / m['step'])"; }

plain=() snap=() overlapped=()
for ((r = 0; r < rounds; r++)); do
  rm -rf "$work/plain" "$work/snap" "$work/overlapped"
  run4 --out "$work/plain" > "$work/plain.json"; plain+=("$(step_seconds "$work/plain")")
  run4 --out "$work/snap" --memory-snapshot-every "$n" > "$work/snap.json"; snap+=("$(step_seconds "$work/snap")")
  if [ "$overlap" = 1 ]; then
    run4 --out "$work/overlapped" --memory-snapshot-every "$n" --memory-snapshot-overlap > "$work/overlapped.json"
    overlapped+=("$(step_seconds "$work/overlapped")")
  fi
done
want=$(field '["params_sha256"]' < "$work/snap.json")

stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
run="$work/fault"
"$strider" launch -n 4 --hostfile "$work/hostfile" --launcher "$hosts mpirun -x OMP_NUM_THREADS=1" \
  -- "$strider" "${train[@]}" --memory-snapshot-every "$n" "${fault_flags[@]}" --out "$run" > "$run.out" \
  2> >(stamp > "$run.err") &
launch=$!
for _ in $(seq 1 6000); do
  s=$(sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$run/memory-snapshot.json" 2>/dev/null || true)
  [ -n "$s" ] && [ "$s" -ge "$kill_after" ] && break
  sleep 0.01
done
killed_at=$(date +%s.%N); "$hosts" kill h1
wait "$launch" || true
sleep 0.5  # the stamping of the last lines

python3 - "$run.err" "$killed_at" "$s" "$want" "$(field '["params_sha256"]' < "$run.out" 2>/dev/null || echo null)" \
  "$(field '["memory_snapshots"]' < "$work/snap.json")" "${plain[*]}" "${snap[*]}" "$n" "$rate" "${overlapped[*]}" \
  "$([ "$overlap" = 1 ] && field '["memory_snapshots"]' < "$work/overlapped.json" || echo null)" <<'EOF'
import json, re, statistics, sys
err, killed_at, snap_step, want, got, stats, plain, snap, n, rate, overlapped, overlapped_stats = sys.argv[1:]
killed_at = float(killed_at)
lines = [(float(l.split(' ', 1)[0]), l.split(' ', 1)[1].rstrip('\n')) for l in open(err) if ' ' in l]
def first(pattern):
    for t, l in lines:
        m = re.search(pattern, l)
        if m: return t, m
    return None, None
t_restart, _ = first(r'strider launch: restart 1')
t_resuming, m_res = first(r'^resuming .*: step (\d+),.*found and loaded in ([0-9.e-]+) s')
plain = [float(x) for x in plain.split()]
snap = [float(x) for x in snap.split()]
step = statistics.median(plain)
out = {"rate": rate, "every": int(n), "step_seconds": step, "step_seconds_with_snapshots": statistics.median(snap),
       "stall_ratio": statistics.median(snap) / step, "memory_snapshots": json.loads(stats),
       "snapshot_at_kill": int(snap_step)}
if overlapped.split():
    o = statistics.median(float(x) for x in overlapped.split())
    out.update({"step_seconds_with_overlapped_snapshots": o, "overlapped_stall_ratio": o / step,
                "overlapped_memory_snapshots": json.loads(overlapped_stats)})
if t_resuming and t_restart:
    load = float(m_res.group(2))
    out.update({"resumed_step": int(m_res.group(1)),
                "kill_to_training_seconds": t_resuming - killed_at,
                "kill_to_relaunch_seconds": t_restart - killed_at,
                "startup_seconds": t_resuming - t_restart - load,
                "find_and_load_seconds": load})
    beyond = out["kill_to_training_seconds"] - out["startup_seconds"]
    out["beyond_startup_in_steps"] = beyond / step
out["bitwise_equal"] = got == want
print(json.dumps(out))
EOF
