#!/usr/bin/env bash
# Runs every libFuzzer target of a build (STRIDER_BUILD_FUZZERS=ON) for a bounded time, each
# from its committed seed corpus (fuzz/corpus/<target>); a crash, leak or sanitizer report
# fails the run and leaves the input in build/fuzz-artifacts/. Each target is single-threaded, so
# FUZZ_JOBS of them (default: the CPUs there are) run at once: every target still gets its SECONDS.
# Usage: run-fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:-60}
jobs=${FUZZ_JOBS:-$(nproc)}
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "run-fuzzers.sh: FUZZ_JOBS must be a positive whole number, not '$jobs'" >&2
  exit 2
fi
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

# One target; its exit code is libFuzzer's.
fuzz_one() {
  local exe=$1 name corpus
  name=$(basename "$exe")
  corpus="$build/fuzz-corpus/$name"   # grows during the run; the committed seeds stay as they are
  mkdir -p "$corpus"
  cp -n fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null || true
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$corpus" > "$build/$name.log" 2>&1
}

# What a finished target found: its stats, and on failure the log's tail and where the input is.
report() {
  local name=$1 rc=$2
  echo "-- $name: ${seconds} s from $(ls "fuzz/corpus/${name#fuzz_}" 2>/dev/null | wc -l) committed seeds, exit $rc"
  grep -E "^stat::(number_of_executed_units|new_units_added)" "$build/$name.log" || true
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$build/$name.log"
    echo "$name failed (exit $rc); the input is in $artifacts/"
  fi
}

declare -A running=()   # pid -> target name
failed=0
# Waits for one running target and reports it.
reap_one() {
  local pid="" rc=0
  wait -n -p pid "${!running[@]}" || rc=$?
  if [ -z "$pid" ] || [ -z "${running[$pid]+set}" ]; then
    # No job to wait for any more (one lost to a signal that ended its shell): name the targets.
    echo "run-fuzzers.sh: lost track of the running targets (${running[*]}); wait said $rc" >&2
    failed=1
    running=()
    return
  fi
  report "${running[$pid]}" "$rc"
  [ "$rc" -eq 0 ] || failed=1
  unset "running[$pid]"
}

for exe in "$build"/fuzz/fuzz_*; do
  while [ "${#running[@]}" -ge "$jobs" ]; do reap_one; done
  [ "$failed" -eq 0 ] || break
  fuzz_one "$exe" &
  running[$!]=$(basename "$exe")
done
while [ "${#running[@]}" -gt 0 ]; do reap_one; done
if [ "$failed" -ne 0 ]; then
  echo "fuzzing failed"
  exit 1
fi
echo "fuzzing passed"
