#!/usr/bin/env bash
# strider-oracle on inputs that prove nothing or are not JSON: each fails, naming the path (and
# the line). Usage: oracle_bad_inputs.sh STRIDER_ORACLE WORK_DIR
set -uo pipefail
oracle=${1:?usage: oracle_bad_inputs.sh STRIDER_ORACLE WORK_DIR} work=${2:?usage: oracle_bad_inputs.sh STRIDER_ORACLE WORK_DIR}
rm -rf "$work"; mkdir -p "$work"
failed=0
expect() {  # expect "what" "fragment" FILE
  local out rc
  out=$("$oracle" "$3" 2>&1); rc=$?
  if [ $rc -eq 0 ] || ! grep -qF -- "$2" <<< "$out"; then failed=$((failed + 1)); echo "FAIL: $1: exit $rc: $out"; fi
}
expect "a directory" "strider-oracle: $work is not a regular file" "$work"
expect "a missing file" "$work/none.jsonl is missing" "$work/none.jsonl"
: > "$work/empty.jsonl"
expect "an empty file" "$work/empty.jsonl holds no case" "$work/empty.jsonl"
printf '\n{"not json"\n' > "$work/bad.jsonl"
expect "a line that is not JSON" "FAIL $work/bad.jsonl:2: not a JSON case" "$work/bad.jsonl"
echo "oracle bad inputs: $failed failed"
[ $failed -eq 0 ]
