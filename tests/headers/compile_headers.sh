#!/usr/bin/env bash
# Every public header compiles alone, and the designated initializers users write for every
# public options struct compile, without a warning under -Wall -Wextra -Werror, with the
# headers searched as ordinary (-I, not system) directories: what a pkg-config build sees.
# usage: compile_headers.sh CXX INCLUDE_DIR... (the directories holding strider/*.h and
#        strider/config.h: the source and build trees', or one installed include directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cxx=${1:?usage: compile_headers.sh CXX INCLUDE_DIR...}
shift
[ $# -gt 0 ] || { echo "compile_headers.sh: name at least one include directory" >&2; exit 2; }
includes=()
headers_root=""
for dir in "$@"; do
  includes+=("-I$dir")
  [ -f "$dir/strider/strider.h" ] && headers_root=$dir
done
[ -n "$headers_root" ] || { echo "compile_headers.sh: no strider/strider.h under $*" >&2; exit 2; }
flags=(-std=c++20 -Wall -Wextra -Werror "${includes[@]}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Every options struct users fill in with designated initializers must appear in the test, so
# a new one is covered (and given defaults) when it is added.
status=0
for s in $(grep -rhoE 'struct [A-Za-z]+Options\b' "$headers_root/strider" | awk '{print $2}' | sort -u); do
  if ! grep -q "\b$s\b" "$here/designated_initializers.cpp"; then
    echo "FAIL: $s is a public options struct, but tests/headers/designated_initializers.cpp does not" \
         "build it with designated initializers; add it there (and default every member)"
    status=1
  fi
done

# One translation unit per header, JOBS (default 2) at a time; each failure prints its log.
count=$(cd "$headers_root" && find strider -name '*.h' | wc -l)
export cxx work
export flags_str="${flags[*]}"
if ! (cd "$headers_root" && find strider -name '*.h' | sort) | xargs -P "${JOBS:-2}" -I{} bash -c '
    read -r -a flags <<< "$flags_str"
    tu="$work/$(echo "$1" | tr "/." "__").cpp"
    echo "#include <$1>" > "$tu"
    if ! "$cxx" "${flags[@]}" -fsyntax-only "$tu" > "$tu.log" 2>&1; then
      echo "FAIL: <$1> alone:"; sed "s/^/    /" "$tu.log" | head -n 30
      exit 1
    fi' _ {}; then
  status=1
fi

# -O2 and an object file: GCC's middle end adds warnings a syntax check never sees.
if ! "$cxx" "${flags[@]}" -O2 -c "$here/designated_initializers.cpp" -o "$work/di.o" > "$work/di.log" 2>&1; then
  echo "FAIL: designated_initializers.cpp:"; sed 's/^/    /' "$work/di.log" | head -n 40
  status=1
fi
[ $status -eq 0 ] && echo "headers ok: $count headers alone and every options struct's designated initializers, $cxx -Wall -Wextra -Werror"
exit $status
