#!/usr/bin/env bash
# `strider launch -n 3 --hostfile F` where F has 1 slot: refused (naming the requested and
# available slots and the fix) instead of training at world size 1; with --min-ranks 1 it starts
# 1 rank and says how many and why.
# Usage: launch_slots.sh MPIRUN STRIDER WORK_DIR
set -uo pipefail
mpirun=$1 strider=$2 work=$3
rm -rf "$work"; mkdir -p "$work"
echo "localhost slots=1" > "$work/hosts"
failures=0
# The ranks' command: prints its rank count (OpenMPI's OMPI_COMM_WORLD_SIZE).
job=(sh -c 'echo "world $OMPI_COMM_WORLD_SIZE"' job --out "$work/run")
timeout 60 "$strider" launch -n 3 --hostfile "$work/hosts" --launcher "$mpirun --bind-to none" -- "${job[@]}" \
  > "$work/refused.out" 2> "$work/refused.err"
code=$?
echo "without --min-ranks: exit $code"; sed 's/^/  /' "$work/refused.err"
if [ $code -eq 0 ] || grep -q world "$work/refused.out" ||
   ! grep -q "has 1 slots (localhost (1)) for the 3 ranks -n asks for. Give the hostfile more slots, or --min-ranks below -n" "$work/refused.err"; then
  echo "  FAILED"; failures=$((failures + 1))
fi
timeout 60 "$strider" launch -n 3 --min-ranks 1 --hostfile "$work/hosts" --launcher "$mpirun --bind-to none" -- "${job[@]}" \
  > "$work/fewer.out" 2> "$work/fewer.err"
code=$?
echo "with --min-ranks 1: exit $code, $(cat "$work/fewer.out")"; sed 's/^/  /' "$work/fewer.err"
if [ $code -ne 0 ] || [ "$(cat "$work/fewer.out")" != "world 1" ] ||
   ! grep -q "for the 3 ranks -n asks for; starting 1 ranks, as --min-ranks 1 allows" "$work/fewer.err"; then
  echo "  FAILED"; failures=$((failures + 1))
fi
echo "failures: $failures"
[ "$failures" -eq 0 ]
