#!/usr/bin/env bash
# scripts/check-layers.sh on crafted trees: it must fail on an include no CMake edge allows
# (with the real src/CMakeLists.txt, and with small graphs for PUBLIC/PRIVATE propagation) and
# pass on the includes the edges allow. Prints "N failed" last; exits non-zero on a failure.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
check="$repo/scripts/check-layers.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# tree NAME CMAKELISTS: a fresh tree whose src/CMakeLists.txt is the file CMAKELISTS.
tree() {
  rm -rf "${work:?}/$1"
  mkdir -p "$work/$1/src"
  cp "$2" "$work/$1/src/CMakeLists.txt"
}
# put NAME PATH INCLUDE: a file at PATH in tree NAME that includes INCLUDE.
put() {
  mkdir -p "$(dirname "$work/$1/$2")"
  printf '// crafted\n#include %s\n' "$3" > "$work/$1/$2"
}
# expect NAME pass|fail [TEXT]: runs the check on tree NAME; a failure must print TEXT.
expect() {
  local out rc
  out=$("$check" "$work/$1" 2>&1)
  rc=$?
  if [ "$2" = pass ] && [ $rc -ne 0 ]; then
    echo "FAIL $1: expected to pass, got exit $rc: $out"
    failed=$((failed + 1))
  elif [ "$2" = fail ] && { [ $rc -ne 1 ] || [[ $out != *"$3"* ]]; }; then
    echo "FAIL $1: expected exit 1 naming '$3', got exit $rc: $out"
    failed=$((failed + 1))
  else
    echo "ok   $1 ($2)"
  fi
}

real="$repo/src/CMakeLists.txt"

# The include that compiled only because every target has src/ on its path (issue 33 §2):
# autograd links ops, which links kernels PRIVATEly.
tree autograd_kernels "$real"
put autograd_kernels src/autograd/formulas/pointwise.cpp '"kernels/pointwise_table.h"'
expect autograd_kernels fail "src/autograd/formulas/pointwise.cpp (autograd) includes a kernels header"

# The same from a public header, spelled with angle brackets.
tree public_header "$real"
put public_header include/strider/nn/layers.h '<strider/kernels/conv.h>'
expect public_header fail "include/strider/nn/layers.h (nn) includes a kernels header"

# An include up the layers.
tree upward "$real"
put upward src/core/tensor.cpp '"strider/autograd/functions.h"'
expect upward fail "src/core/tensor.cpp (core) includes a autograd header"

# dist is not below ops or nn; fsdp is above them all.
tree sideways "$real"
put sideways src/nn/module.cpp '"strider/dist/process_group.h"'
expect sideways fail "(nn) includes a dist header"

# The umbrella header is for users only.
tree umbrella "$real"
put umbrella src/models/gpt.cpp '"strider/strider.h"'
expect umbrella fail "umbrella header"

# What the edges allow: a private dependency (ops -> kernels), a public one (autograd -> ops),
# what a public dependency exports (checkpoint -> fsdp -> dist), and the core tables everywhere.
tree allowed "$real"
put allowed src/ops/pointwise.cpp '"kernels/pointwise.h"'
put allowed src/autograd/formulas/pointwise.cpp '"strider/ops/pointwise.h"'
put allowed src/autograd/formulas/reduce.cpp '"strider/core/reduce_table.h"'
put allowed src/kernels/pointwise.h '"strider/core/pointwise_table.h"'
put allowed src/checkpoint/load.cpp '"strider/dist/process_group.h"'
put allowed include/strider/fsdp/options.h '"strider/nn/module.h"'
expect allowed pass

# Propagation on a small graph: top -PUBLIC-> mid -PUBLIC-> low, top -PUBLIC-> side -PRIVATE-> hidden.
cat > "$work/graph.cmake" <<'EOF'
# a comment naming strider_layer(hidden) must not count
strider_layer(low SOURCES low/a.cpp)
strider_layer(hidden SOURCES hidden/a.cpp)
strider_layer(mid SOURCES mid/a.cpp PUBLIC_DEPS strider_low OpenMP::OpenMP_CXX)
strider_layer(side
  SOURCES side/a.cpp
  PUBLIC_DEPS strider_low PRIVATE_DEPS strider_hidden ${SOME_VARIABLE})
strider_layer(top SOURCES top/a.cpp PUBLIC_DEPS strider_mid strider_side)
EOF
tree graph_public "$work/graph.cmake"
put graph_public src/top/a.cpp '"low/x.h"'
put graph_public src/side/a.cpp '"hidden/x.h"'
put graph_public src/mid/a.cpp '"strider/low/x.h"'
expect graph_public pass

tree graph_private "$work/graph.cmake"
put graph_private src/top/a.cpp '"hidden/x.h"'
expect graph_private fail "src/top/a.cpp (top) includes a hidden header, but top does not depend on hidden"

tree graph_reverse "$work/graph.cmake"
put graph_reverse src/low/a.cpp '"strider/mid/x.h"'
expect graph_reverse fail "src/low/a.cpp (low) includes a mid header"

echo "$failed failed"
[ $failed -eq 0 ]
