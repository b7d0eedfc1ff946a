#!/usr/bin/env bash
# Checks that the float32, bfloat16 and float16 elementwise kernels built on vmath
# (src/kernels/vec_math.h: exp, log, erf, gelu, ...) run on packed FMAs at AVX2 and AVX-512: a
# select GCC cannot if-convert, or a vmath call it does not inline, makes the whole loop scalar
# without a warning (at AVX2 that cost 13% of a GPT step until the kernels were compiled with
# -fno-trapping-math, cmake/isa_kernels.cmake; bfloat16's gelu gradient ran 10x slower when it
# stopped being inlined). The rows that use vmath
# (directly, or through an fn::*_fast helper) come from include/strider/core/pointwise_table.h,
# whose row order is the enum's; each is found in the level's pointwise object by its enum value
# in the kernel's symbol.
#
# usage: check-vmath-vectorized.sh OBJDIR TABLE   OBJDIR holds strider_kernels_isa_<level>.dir/
set -euo pipefail
objdir=$1
table=$2

# "Unary 9", "Binary 8", ...: the rows that call vmath, by list and position.
rows=$(awk '
  /^#define STRIDER_UNARY_OPS/ { list = "Unary"; i = -1; next }
  /^#define STRIDER_BINARY_OPS/ { list = "Binary"; i = -1; next }
  list == "" { next }
  /^ *X\(/ { if (i >= 0 && uses) print list, i; i++; uses = 0 }
  /vmath::|fn::[a-z_]+_fast/ { uses = 1 }
  !/\\$/ { if (i >= 0 && uses) print list, i; list = ""; uses = 0 }
' "$table")
if [[ -z $rows ]]; then
  echo "no vmath rows found in $table"
  exit 1
fi

fail=0
for level in avx2 avx512; do
  case $level in
    avx2) reg='%ymm' ;;
    avx512) reg='%zmm' ;;
  esac
  obj="$objdir/strider_kernels_isa_$level.dir/kernels/cpu/pointwise.cpp.o"
  if [[ ! -f $obj ]]; then
    echo "missing $obj"
    exit 1
  fi
  # Packed FMAs per kernel, keyed "Unary 9 float" (hot and .cold parts summed).
  counts=$(objdump -d --no-show-raw-insn -C "$obj" | awk -v reg="$reg" '
    /^[0-9a-f]+ <.*>:$/ {
      key = ""
      if ($0 ~ /run_plan_range/ && match($0, /operator\(\)<(float|strider::BFloat16|strider::Half)>\(\) const::\{lambda[^}]*#1\}::operator\(\)<\(strider::kernels::(Unary|Binary)Op\)[0-9]+>/)) {
        s = substr($0, RSTART, RLENGTH)
        kind = (s ~ /UnaryOp/) ? "Unary" : "Binary"
        dtype = (s ~ /^operator\(\)<float>/) ? "float" : (s ~ /BFloat16/) ? "bfloat16" : "float16"
        sub(/.*Op\)/, "", s); sub(/>.*/, "", s)
        key = kind " " s " " dtype
        seen[key] = 1
      }
      next
    }
    key != "" && $0 ~ /vfn?m(add|sub)[0-9]+ps/ && index($0, reg) { n[key]++ }
    key != "" && $0 ~ /call.*vmath::/ { calls[key]++ }
    END { for (k in seen) print k, n[k] + 0, calls[k] + 0 }')
  if [[ -z $counts ]]; then
    echo "$level: no elementwise kernel recognised in $obj (has the symbol format changed?)"
    exit 1
  fi
  while read -r list index; do
    for dtype in float bfloat16 float16; do
      read -r n calls < <(awk -v k="$list $index $dtype" '$1 " " $2 " " $3 == k { print $4, $5 }' <<<"$counts") || n=""
      if [[ -z $n ]]; then
        echo "$level: no $dtype kernel for ${list}Op $index in $obj"
        fail=1
      elif [[ $n == 0 ]]; then
        echo "$level: ${list}Op $index (a vmath row of $table) has no packed FMA on $reg in its $dtype kernel: its loop runs scalar"
        fail=1
      elif [[ $calls != 0 ]]; then
        echo "$level: ${list}Op $index's $dtype kernel calls vmath out of line ($calls calls): that loop runs scalar"
        fail=1
      fi
    done
  done <<<"$rows"
done
checked=$(wc -l <<<"$rows")
echo "$checked vmath rows checked at avx2 and avx512, each in float32, bfloat16 and float16"
exit $fail
