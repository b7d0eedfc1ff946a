#!/usr/bin/env bash
# Checks the kernels compiled once per ISA level (cmake/isa_kernels.cmake):
#  - no object of a level holds a symbol the linker could merge with another level's copy
#    (weak, unique or comdat-style) unless it is in that level's namespace, isa_<level>;
#  - no writable data sits outside it: -fno-weak gives each object its own copy of a header's
#    inline variable or an inline function's static local, which must then be a constant;
#  - baseline objects use no ymm/zmm register, avx2 objects no zmm register, outside the
#    functions marked for a wider level by name.
#
# usage: check-isa-objects.sh OBJDIR    OBJDIR holds strider_kernels_isa_<level>.dir/
#                                       (build/src/CMakeFiles)
set -euo pipefail
objdir=$1
fail=0
found=0
for level in baseline avx2 avx512; do
  case $level in
    baseline) wide='%[yz]mm' ;;
    avx2) wide='%zmm' ;;
    avx512) wide='' ;;
  esac
  while IFS= read -r -d '' o; do
    found=$((found + 1))
    syms=$(nm -C "$o")
    merged=$(grep -E '^ *[0-9a-f]* [WVu] ' <<<"$syms" | grep -v "isa_$level" |
             grep -v 'DW.ref.__gxx_personality_v0' || true)
    guards=$(grep -E '^ *[0-9a-f]* [bBdD] .*::' <<<"$syms" | grep -v "isa_$level" || true)
    if [[ -n $merged || -n $guards ]]; then
      echo "$o: symbols outside isa_$level another level could replace:"
      echo "$merged$guards"
      fail=1
    fi
    if [[ -n $wide ]]; then
      # Functions named *_avx2* / *_avx512* are target-attribute bodies (attention's micro-GEMM)
      # that run only after a cpu_has() check; every other function must stay within the level.
      n=$(objdump -d --no-show-raw-insn -C "$o" |
          awk -v wide="$wide" '/^[0-9a-f]+ <.*>:$/ { marked = ($0 ~ /_avx(2|512)/) }
                               !marked && $0 ~ wide { n++ } END { print n + 0 }')
      if [[ $n != 0 ]]; then
        echo "$o: $n instructions on registers wider than $level allows"
        fail=1
      fi
    fi
  done < <(find "$objdir/strider_kernels_isa_$level.dir" -name '*.o' -print0)
done
if [[ $found == 0 ]]; then
  echo "no per-ISA objects under $objdir"
  exit 1
fi
echo "$found per-ISA objects checked"
exit $fail
