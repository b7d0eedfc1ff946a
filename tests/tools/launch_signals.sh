#!/usr/bin/env bash
# `strider launch` stopped by a user: Ctrl-C (SIGINT to its foreground process group), SIGTERM or
# SIGHUP ends the job it started (mpirun's process group: SIGTERM, SIGKILL after --end-grace),
# waits for it, says so, exits with 128 + the signal, and leaves no launcher, mpirun or rank
# running. A job whose ranks ignore SIGTERM is SIGKILLed after the grace.
# Usage: launch_signals.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
failures=0

# $1: signal, $2: what it is sent to (group or pid), $3: the ranks' shell command
try() {
  local sig=$1 to=$2 body=$3 want=$4
  local tag="strider_launch_signals_$$_${sig}_${to}"  # in every rank's command line: found by pgrep
  local run="$work/$sig-$to"
  setsid "$strider" launch -n 2 --end-grace 1 --launcher "$mpirun --oversubscribe --bind-to none" -- \
    sh -c "$body" "$tag" --out "$run" > "$run.out" 2> "$run.err" &
  local launch=$!
  for _ in $(seq 1 100); do [ "$(pgrep -f -- "$tag" | wc -l)" -ge 4 ] && break; sleep 0.1; done
  local before; before=$(pgrep -f -- "$tag" | wc -l)
  if [ "$to" = group ]; then kill -"$sig" -- -"$launch"; else kill -"$sig" "$launch"; fi
  local code=timeout
  for _ in $(seq 1 150); do kill -0 "$launch" 2>/dev/null || { wait "$launch"; code=$?; break; }; sleep 0.1; done
  sleep 0.5
  local left; left=$(pgrep -f -- "$tag")
  echo "SIG$sig to the launcher's $to ($before processes of the job running): exit $code;" \
       "$(echo "$left" | grep -c .) left running"
  grep "strider launch:" "$run.err" | sed 's/^/  /'
  if [ "$code" != "$want" ] || [ -n "$left" ] || ! grep -q "received SIG$sig; ending the job" "$run.err" ||
     ! grep -q "not restarting after SIG$sig" "$run.err" || grep -q "restart 1" "$run.err" || [ "$before" -lt 3 ]; then
    echo "  FAILED"; failures=$((failures + 1))
    [ -n "$left" ] && kill -9 $left 2>/dev/null
  fi
}
try INT group 'while :; do sleep 0.2; done' 130
try TERM pid 'while :; do sleep 0.2; done' 143
try HUP pid 'while :; do sleep 0.2; done' 129
# Ranks that ignore SIGTERM: SIGKILLed after the 1 s grace (mpirun's own escalation takes about 2 s;
# ranks OpenMPI put in groups of their own are ended too).
try TERM group 'trap "" TERM; while :; do sleep 0.2; done' 143
grep -q "SIGKILL to its process group" "$work/TERM-group.err" || { echo "FAILED: no SIGKILL after the grace"; failures=$((failures + 1)); }
echo "failures: $failures"
[ "$failures" -eq 0 ]
