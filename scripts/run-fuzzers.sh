#!/usr/bin/env bash
# Runs every libFuzzer target of a build (STRIDER_BUILD_FUZZERS=ON) for a bounded time, each
# from its committed seed corpus (fuzz/corpus/<target>); a crash, leak or sanitizer report
# fails the run and leaves the input in build/fuzz-artifacts/. Usage: run-fuzzers.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: run-fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:-60}
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"
for exe in "$build"/fuzz/fuzz_*; do
  name=$(basename "$exe")
  corpus="$build/fuzz-corpus/$name"   # grows during the run; the committed seeds stay as they are
  mkdir -p "$corpus"
  cp -n fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null || true
  echo "-- $name: ${seconds} s from $(ls "$corpus" | wc -l) seeds"
  rc=0
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$name-" "$corpus" > "$build/$name.log" 2>&1 || rc=$?
  grep -E "^stat::(number_of_executed_units|new_units_added)" "$build/$name.log" || true
  if [ $rc -ne 0 ]; then
    tail -n 60 "$build/$name.log"
    echo "$name failed (exit $rc); the input is in $artifacts/"
    exit 1
  fi
done
echo "fuzzing passed"
