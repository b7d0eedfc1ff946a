#!/usr/bin/env bash
# `strider launch` restarts a failed job with no person involved, and the run ends as if nothing
# had happened (deterministic mode: the same parameter and optimizer digests as one process):
#  1. kill -9 of one of 3 ranks mid-run: relaunched on 3 ranks from the latest checkpoint;
#  2. (as root, on 2 emulated hosts x 2 ranks) SIGSTOP of a whole host: the heartbeat names it,
#     and the job is relaunched without that host, on 2 ranks, from the latest checkpoint;
#  3. a job that cannot start stops at its first failure; one killed with no restarts left stops;
#  4. with in-memory snapshots (--memory-snapshot-every 2, no checkpoint file until the end):
#     kill -9 of one of 3 ranks: relaunched from the snapshot, redoing at most 2 steps;
#  5. (as root, on 2 emulated hosts x 2 ranks, snapshots in each host's own /dev/shm, their
#     partner copies overlapped with training: --memory-snapshot-overlap) a whole host killed
#     with its memory emptied: relaunched from the snapshot, whose lost half comes from the
#     partner copies on the surviving host, redoing at most 3 steps.
# Usage: launch_restart.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
here=$(dirname "$(readlink -f "$0")")
rm -rf "$work"; mkdir -p "$work"
train=(train --model gpt --text-file /usr/share/common-licenses/GPL-3 --n-layer 2 --n-embd 64 --seq 32
       --batch-size 12 --optimizer adamw --lr 1e-3 --fsdp-min-params 10000 --epochs 1 --limit-batches 60 --json
       --deterministic --micro-batches 12 --fsdp full_shard --no-progress --heartbeat-timeout 3)
every4=(--checkpoint-every 4)  # the file checkpoints' interval; the in-memory cases give their own (a flag is taken once)
digests() { sed -n 's/.*"optimizer_sha256":"\([0-9a-f]*\)".*"params_sha256":"\([0-9a-f]*\)".*/\1 \2/p' <<< "$1"; }
want=$(digests "$("$strider" "${train[@]}" "${every4[@]}" --out "$work/alone" | tail -n 1)")
echo "one process, uninterrupted: $want"
failures=0

# Waits for the run's checkpoint of step >= $2, then runs $3... (the fault: chosen then, not
# before, so it hits the processes running at that moment).
hit_after() {
  local run=$1 step=$2; shift 2
  for _ in $(seq 1 1200); do
    [ -n "$(ls -d "$run"/checkpoint-* 2>/dev/null | awk -F- -v s="$step" '$NF + 0 >= s' | head -n 1)" ] && break
    sleep 0.05
  done
  "$@"
}
kill_a_rank() { kill -9 "$(ranks_of "$1" | shuf -n 1)" 2>/dev/null; }
ranks_of() {  # the trainer processes writing to run directory $1 (not the launcher, whose
  # command line holds the trainer's after its "--": the program itself must be "strider train")
  pgrep -f -- "--out $1" | while read -r p; do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = strider ] && \
    tr '\0' ' ' < /proc/"$p"/cmdline | grep -q "^[^ ]*strider train " && echo "$p"; done
}

# 1. One rank killed.
run="$work/killed"
"$strider" launch -n 3 --max-restarts 2 --launcher "$mpirun --oversubscribe --bind-to none" -- \
  "$strider" "${train[@]}" "${every4[@]}" --out "$run" > "$run.out" 2> "$run.err" &
launch=$!
sleep 1; for _ in $(seq 1 100); do [ -n "$(ranks_of "$run")" ] && break; sleep 0.1; done
hit_after "$run" 8 kill_a_rank "$run"
wait "$launch"; code=$?
got=$(digests "$(tail -n 1 "$run.out")")
restart=$(grep -m1 "strider launch: restart 1" "$run.err")
echo "kill -9 of a rank: exit $code; ${restart:-no restart logged}"
if [ $code -ne 0 ] || [ "$got" != "$want" ] || [ -z "$restart" ]; then
  echo "  FAILED: digests '$got'"; tail -n 20 "$run.err"; failures=$((failures + 1))
fi

# Waits for the run's in-memory snapshot of step >= $2 (its record), then runs $3...
hit_after_snapshot() {
  local run=$1 step=$2; shift 2
  for _ in $(seq 1 1200); do
    s=$(sed -n 's/.*"step":\([0-9]*\).*/\1/p' "$run/memory-snapshot.json" 2>/dev/null)
    [ -n "$s" ] && [ "$s" -ge "$step" ] && break
    sleep 0.02
  done
  "$@"
}
# Checks a run relaunched from its in-memory snapshot: exit 0, the digests of one process, the
# restart resumed from the snapshot, and no more than $4 (default 2: N) recorded steps were redone.
check_memory_restart() {
  local what=$1 code=$2 run=$3 most=${4:-2}
  got=$(digests "$(tail -n 1 "$run.out")")
  restart=$(grep -m1 "strider launch: restart 1" "$run.err")
  redo=$(sed -n 's/.* (\([0-9]*\) recorded steps to redo.*/\1/p' <<< "$restart")
  echo "$what: exit $code; ${restart:-no restart logged}"
  grep -h -E "recovered the in-memory snapshot|training again|^resuming" "$run.err" | head -n 3 | sed "s/^/  /"
  if [ "$code" -ne 0 ] || [ "$got" != "$want" ] || ! grep -q "(the in-memory snapshot)" <<< "$restart" || \
     [ "${redo:-0}" -gt "$most" ] || ! grep -q "recovered the in-memory snapshot" "$run.err"; then
    echo "  FAILED: digests '$got'"; tail -n 20 "$run.err"; failures=$((failures + 1))
  fi
}

# 4. In-memory snapshots, one rank killed.
stores_before=$(ls /dev/shm/strider-snapshots/ 2>/dev/null)
run="$work/memory-killed"
"$strider" launch -n 3 --max-restarts 2 --launcher "$mpirun --oversubscribe --bind-to none" -- \
  "$strider" "${train[@]}" --checkpoint-every 1000 --memory-snapshot-every 2 --out "$run" > "$run.out" 2> "$run.err" &
launch=$!
sleep 1; for _ in $(seq 1 100); do [ -n "$(ranks_of "$run")" ] && break; sleep 0.1; done
hit_after_snapshot "$run" 10 kill_a_rank "$run"
wait "$launch"; code=$?
check_memory_restart "in-memory snapshots, kill -9 of a rank" $code "$run"
[ "$(ls /dev/shm/strider-snapshots/ 2>/dev/null)" = "$stores_before" ] || {
  echo "  FAILED: the finished run left its snapshots in /dev/shm"; failures=$((failures + 1)); }

# 2. A whole emulated host stopped: relaunched without it.
hosts="$here/../../scripts/emulated-hosts.sh"
if [ "$(id -u)" -eq 0 ] && command -v ip > /dev/null && why=$("$hosts" up 2 2>&1); then
  trap '"$hosts" down' EXIT
  printf 'h0 slots=2\nh1 slots=2\n' > "$work/hostfile"
  run="$work/frozen-host"
  "$strider" launch -n 4 --hostfile "$work/hostfile" --launcher "$hosts mpirun -x OMP_NUM_THREADS=1" \
    -- "$strider" "${train[@]}" "${every4[@]}" --out "$run" > "$run.out" 2> "$run.err" &
  launch=$!
  hit_after "$run" 8 sh -c 'kill -STOP $(ip netns pids strider-h1) 2>/dev/null'
  wait "$launch"; code=$?
  kill -CONT $(ip netns pids strider-h1) 2>/dev/null
  got=$(digests "$(tail -n 1 "$run.out")")
  restart=$(grep -m1 "strider launch: restart 1" "$run.err")
  echo "SIGSTOP of host h1: exit $code; ${restart:-no restart logged}"
  if [ $code -ne 0 ] || [ "$got" != "$want" ] || ! grep -q "froze (no heartbeat); starting 2 ranks on h0 (2)" <<< "$restart"; then
    echo "  FAILED: digests '$got'"; tail -n 20 "$run.err"; failures=$((failures + 1))
  fi

  # 5. In-memory snapshots overlapped with training (the partner copy crosses the link while the
  # next step trains), a whole emulated host killed and its memory lost: at most N + 1 steps redone.
  "$hosts" kill h1; "$hosts" kill h0  # what is left of case 2
  run="$work/memory-host"
  "$strider" launch -n 4 --hostfile "$work/hostfile" --launcher "$hosts mpirun -x OMP_NUM_THREADS=1" \
    -- "$strider" "${train[@]}" --checkpoint-every 1000 --memory-snapshot-every 2 --memory-snapshot-overlap \
    --out "$run" > "$run.out" 2> "$run.err" &
  launch=$!
  hit_after_snapshot "$run" 10 "$hosts" kill h1
  wait "$launch"; code=$?
  check_memory_restart "overlapped in-memory snapshots, host h1 killed with its memory" $code "$run" 3
else
  echo "skipped the emulated-host cases: they need root and network namespaces that can be entered: ${why:-not root}"
fi

# 3. A command that cannot start (its text file is missing) stops at its first failure: a restart
#    runs the same command and would fail the same way. A rank killed once more than
#    --max-restarts allows stops after the restarts, saying so.
run="$work/hopeless"
"$strider" launch -n 2 --max-restarts 3 --launcher "$mpirun --oversubscribe --bind-to none" -- \
  "$strider" train --model gpt --text-file /nonexistent --out "$run" > /dev/null 2> "$run.err"
code=$?
if [ $code -ne 0 ] && grep -q "stopping: .*no step recorded; a restart runs the same command and would fail the same way" \
     "$run.err" && [ "$(grep -c "strider launch: starting" "$run.err")" -eq 1 ] && ! grep -q "restart 1" "$run.err"; then
  echo "a job that cannot start: stopped at its first failure, exit $code"
else
  echo "a job that cannot start: FAILED (exit $code)"; tail -n 5 "$run.err"; failures=$((failures + 1))
fi
run="$work/no-restarts-left"
"$strider" launch -n 2 --max-restarts 0 --launcher "$mpirun --oversubscribe --bind-to none" -- \
  "$strider" "${train[@]}" "${every4[@]}" --out "$run" > /dev/null 2> "$run.err" &
launch=$!
sleep 1; for _ in $(seq 1 100); do [ -n "$(ranks_of "$run")" ] && break; sleep 0.1; done
hit_after "$run" 4 kill_a_rank "$run"
wait "$launch"; code=$?
if [ $code -ne 0 ] && grep -q "stopping: the job failed .* all 0 restarts (--max-restarts) are used" "$run.err"; then
  echo "a rank killed with no restarts left: stopped, exit $code"
else
  echo "a rank killed with no restarts left: FAILED (exit $code)"; tail -n 5 "$run.err"; failures=$((failures + 1))
fi
echo "launch checks failed: $failures"
[ "$failures" -eq 0 ]
