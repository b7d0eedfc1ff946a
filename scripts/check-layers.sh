#!/usr/bin/env bash
# Fails when a file of a layer includes a header of a layer it does not depend on (DESIGN.md:
# layers are CMake targets, linked only downward). The layers and their edges are read from the
# strider_layer(NAME SOURCES ... PUBLIC_DEPS ... PRIVATE_DEPS ...) calls in src/CMakeLists.txt,
# the ones the build links by, so the check and the link lines cannot disagree. A layer may
# include its own headers, its direct dependencies' and whatever those export PUBLICly (CMake's
# rule: ops links kernels PRIVATEly, so autograd, which links ops, may not include kernels).
# Every target compiles with src/ on its include path, so only this check stops such an include.
# The library never includes the users' umbrella header, strider/strider.h.
#
# usage: check-layers.sh [ROOT]    ROOT holds src/CMakeLists.txt, src/<layer>/ and
#                                  include/strider/<layer>/ (default: this repository)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
[ -f src/CMakeLists.txt ] || { echo "check-layers: no src/CMakeLists.txt under $root" >&2; exit 2; }

# One line per layer: "name public_dep ... | private_dep ..." (strider_* targets only; comments
# and other targets such as DNNL::dnnl dropped).
edges=$(sed 's/#.*//' src/CMakeLists.txt | tr '\n' ' ' | grep -oE 'strider_layer\([^)]*\)' |
  sed -E 's/^strider_layer\(//; s/\)$//' | awk '{
    line = $1; pub = ""; priv = ""; mode = ""
    for (i = 2; i <= NF; ++i) {
      if ($i == "SOURCES" || $i == "PUBLIC_DEPS" || $i == "PRIVATE_DEPS") { mode = $i; continue }
      if ($i !~ /^strider_[a-z_]+$/) continue
      dep = substr($i, 9)
      if (mode == "PUBLIC_DEPS") pub = pub " " dep
      else if (mode == "PRIVATE_DEPS") priv = priv " " dep
    }
    print line pub " |" priv
  }')
[ -n "$edges" ] || { echo "check-layers: no strider_layer(...) calls in $root/src/CMakeLists.txt" >&2; exit 2; }

declare -A public_deps private_deps
layers=()
while read -r name rest; do
  layers+=("$name")
  public_deps[$name]=${rest%%|*}
  private_deps[$name]=${rest#*|}
done <<< "$edges"

# The layers a layer's public headers bring along: its PUBLIC dependencies, transitively.
exported() {
  local seen=" $1 " todo=(${public_deps[$1]:-}) d
  while [ ${#todo[@]} -gt 0 ]; do
    d=${todo[0]}
    todo=("${todo[@]:1}")
    [[ $seen == *" $d "* ]] && continue
    seen+="$d "
    todo+=(${public_deps[$d]:-})
  done
  echo "$seen"
}

layer_alternatives=$(IFS='|'; echo "${layers[*]}")
status=0
for layer in "${layers[@]}"; do
  visible=" $layer "
  for d in ${public_deps[$layer]} ${private_deps[$layer]}; do visible+="$(exported "$d") "; done
  for dir in "include/strider/$layer" "src/$layer"; do
    [ -d "$dir" ] || continue
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      file=${line%%:*}
      text=${line#*:}
      if [[ $text =~ strider/strider\.h ]]; then
        echo "layer violation: $file ($layer) includes the users' umbrella header: $text"
        status=1
        continue
      fi
      inc=$(sed -E "s/.*#include *[\"<](strider\/)?($layer_alternatives)\/.*/\2/" <<< "$text")
      if [[ $visible != *" $inc "* ]]; then
        echo "layer violation: $file ($layer) includes a $inc header, but $layer does not depend on $inc" \
             "(src/CMakeLists.txt): $text"
        status=1
      fi
    done < <(grep -rHE "#include *[\"<]((strider/)?($layer_alternatives)/|strider/strider\.h)" "$dir" || true)
  done
done
[ $status -eq 0 ] && echo "layers ok: every include follows an edge of src/CMakeLists.txt (${#layers[@]} layers)"
exit $status
