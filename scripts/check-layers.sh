#!/usr/bin/env bash
# Fails when a file includes a header of a higher layer (DESIGN.md: layers depend only downward).
set -euo pipefail
cd "$(dirname "$0")/.."
order=(core kernels dist ops autograd nn optim io fsdp checkpoint models)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && echo "$i" && return; done; echo -1; }
status=0
for layer in "${order[@]}"; do
  r=$(rank "$layer")
  for dir in "include/strider/$layer" "src/$layer"; do
    [ -d "$dir" ] || continue
    while IFS= read -r line; do
      file=${line%%:*}
      inc=$(sed -E 's/.*#include ["<](strider\/)?([a-z_]+)\/.*/\2/' <<< "${line#*:}")
      ir=$(rank "$inc")
      if [ "$ir" -gt "$r" ]; then
        echo "layer violation: $file ($layer) includes a $inc header: ${line#*:}"
        status=1
      fi
    done < <(grep -HnE '#include ["<](strider/)?(core|kernels|dist|ops|autograd|nn|optim|io|fsdp|checkpoint|models)/' -r "$dir" | sed -E 's/:[0-9]+:/:/')
  done
done
[ $status -eq 0 ] && echo "layers ok: every include points down"
exit $status
